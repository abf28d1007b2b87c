// The on-disk half of a Store: data files written crash-safely, the bbolt
// index of records, and the recovery that reconciles the two at open.
package copies

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/xid"
	"go.etcd.io/bbolt"

	"github.com/granary-dev/granary/store"
)

const (
	indexName   = "replicas.db"
	dataDirName = "data"
	tmpSuffix   = ".tmp"
)

// copyRecord is one copy as the index keeps it (JSON). It lives in the bbolt
// bucket named Primary under indexKey(Bucket, Key); File names its data
// file under the data directory.
type copyRecord struct {
	Primary      string           `json:"primary"`
	Bucket       string           `json:"bucket"`
	Key          string           `json:"key"`
	ETag         string           `json:"etag"`
	Size         int64            `json:"size"`
	LastModified time.Time        `json:"lastModified"`
	Meta         store.ObjectMeta `json:"meta"`
	File         string           `json:"file"`
}

// indexKey is a copy's key inside its primary's bbolt bucket. Bucket
// names never hold "/", so the split is unambiguous.
func indexKey(bucket, key string) []byte { return []byte(bucket + "/" + key) }

func openIndex(path string) (*bbolt.DB, error) {
	// The timeout turns a second process on the same dir into an error
	// instead of a hang on bbolt's file lock.
	db, err := bbolt.Open(path, store.PrivateFileMode, &bbolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("copies: open replica index: %w", err)
	}
	return db, nil
}

// ctxReader fails reads once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// writeData copies exactly size bytes of body into a new data file and
// makes it durable: temp file, fsync, rename, fsync of the directory. It
// returns the file's name; on any error nothing is left behind.
func (r *Store) writeData(ctx context.Context, size int64, body io.Reader) (name string, err error) {
	f, err := os.CreateTemp(r.dir, "put-*"+tmpSuffix)
	if err != nil {
		return "", err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	src := ctxReader{ctx: ctx, r: body}
	n, err := io.CopyN(f, src, size)
	if errors.Is(err, io.EOF) {
		return "", fmt.Errorf("%w: got %d of %d bytes", store.ErrIncompleteBody, n, size)
	}
	if err != nil {
		return "", err
	}
	// One byte more than declared is an error too: the sender and the
	// record would disagree on the object.
	var extra [1]byte
	if m, err := io.ReadFull(src, extra[:]); m > 0 {
		return "", fmt.Errorf("%w (declared %d)", errLongBody, size)
	} else if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	if err := f.Sync(); err != nil {
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	name = xid.New().String()
	if err := os.Rename(tmp, filepath.Join(r.dir, name)); err != nil {
		return "", err
	}
	tmp = filepath.Join(r.dir, name) // so the deferred cleanup removes it
	if err := syncDir(r.dir); err != nil {
		return "", err
	}
	return name, nil
}

// commit records rec, replacing any record of the same primary, bucket
// and key written no later (by the primary's clock: copies of one key may
// arrive out of order), in one bbolt transaction (fsynced at commit). It
// returns the data file no record names any more ("" if none), which the
// caller removes: the replaced record's, or rec's own if a newer copy was
// kept.
func (r *Store) commit(rec copyRecord) (old string, err error) {
	val, err := json.Marshal(rec)
	if err != nil {
		return "", err
	}
	err = r.db.Update(func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte(rec.Primary))
		if err != nil {
			return err
		}
		k := indexKey(rec.Bucket, rec.Key)
		if prev := b.Get(k); prev != nil {
			var p copyRecord
			if json.Unmarshal(prev, &p) == nil {
				if p.LastModified.After(rec.LastModified) {
					old = rec.File // a newer copy arrived first: keep it
					return nil
				}
				old = p.File
			}
		}
		return b.Put(k, val)
	})
	if err != nil {
		return "", fmt.Errorf("copies: record replica of %s/%s: %w", rec.Bucket, rec.Key, err)
	}
	return old, nil
}

// dropIf deletes primary's record of bucket/key when match says so of it,
// then its data file. A missing record is not an error.
func (r *Store) dropIf(primary, bucket, key string, match func(copyRecord) bool) error {
	var file string
	err := r.db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(primary))
		if b == nil {
			return nil
		}
		k := indexKey(bucket, key)
		v := b.Get(k)
		if v == nil {
			return nil
		}
		var rec copyRecord
		if err := json.Unmarshal(v, &rec); err != nil {
			return err
		}
		if !match(rec) {
			return nil
		}
		file = rec.File
		if err := b.Delete(k); err != nil {
			return err
		}
		// A primary's bucket goes with its last copy, so the index does
		// not keep every node the cluster ever had.
		if first, _ := b.Cursor().First(); first == nil {
			return tx.DeleteBucket([]byte(primary))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("copies: drop replica of %s/%s: %w", bucket, key, err)
	}
	if file != "" {
		r.removeData(file)
	}
	return nil
}

// list returns primary's records in index order.
func (r *Store) list(primary string) ([]copyRecord, error) {
	var out []copyRecord
	err := r.db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(primary))
		if b == nil {
			return nil
		}
		return b.ForEach(func(_, v []byte) error {
			var rec copyRecord
			if err := json.Unmarshal(v, &rec); err != nil {
				return err
			}
			out = append(out, rec)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("copies: list replicas of %s: %w", primary, err)
	}
	return out, nil
}

// removeData removes a data file no record names. A failure only leaves
// an orphan, which the next open removes.
func (r *Store) removeData(name string) {
	if err := os.Remove(filepath.Join(r.dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		r.log.Warn().Err(err).Str("file", name).Msg("cannot remove replica data file")
	}
}

// reconcile makes index and data directory agree after a crash: a record
// whose data file is missing or of the wrong size (or unreadable) is
// deleted; temp files and data files no record names are removed.
func (r *Store) reconcile() error {
	named := map[string]bool{}
	err := r.db.Update(func(tx *bbolt.Tx) error {
		var emptied [][]byte // buckets are deleted after the walk over them
		err := tx.ForEach(func(primary []byte, b *bbolt.Bucket) error {
			var bad [][]byte
			err := b.ForEach(func(k, v []byte) error {
				var rec copyRecord
				if json.Unmarshal(v, &rec) == nil && rec.File != "" && r.dataComplete(rec) {
					named[rec.File] = true
					return nil
				}
				r.log.Warn().Str("primary", string(primary)).Str("entry", string(k)).
					Msg("replica record without complete data dropped")
				bad = append(bad, append([]byte(nil), k...))
				return nil
			})
			if err != nil {
				return err
			}
			for _, k := range bad {
				if err := b.Delete(k); err != nil {
					return err
				}
			}
			if first, _ := b.Cursor().First(); first == nil {
				emptied = append(emptied, append([]byte(nil), primary...))
			}
			return nil
		})
		for _, name := range emptied {
			if err == nil {
				err = tx.DeleteBucket(name)
			}
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("copies: recover replica index: %w", err)
	}
	entries, err := os.ReadDir(r.dir)
	if err != nil {
		return fmt.Errorf("copies: recover replica data: %w", err)
	}
	for _, e := range entries {
		if named[e.Name()] {
			continue
		}
		if !strings.HasSuffix(e.Name(), tmpSuffix) {
			r.log.Warn().Str("file", e.Name()).Msg("replica data without record removed")
		}
		if err := os.RemoveAll(filepath.Join(r.dir, e.Name())); err != nil {
			return fmt.Errorf("copies: recover replica data: %w", err)
		}
	}
	return nil
}

// dataComplete reports whether rec's data file is a regular file of the
// recorded size.
func (r *Store) dataComplete(rec copyRecord) bool {
	if strings.ContainsAny(rec.File, `/\`) {
		return false
	}
	st, err := os.Stat(filepath.Join(r.dir, rec.File))
	return err == nil && st.Mode().IsRegular() && st.Size() == rec.Size
}

// syncDir fsyncs a directory, so renames and creations in it are durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
