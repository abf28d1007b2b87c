// Package copies is the store of write-back copies: objects a cluster
// node keeps, durable on disk, for another node (their primary) that
// acknowledged them in write-back mode, until the primary reports them at
// the origin, or dies and this node uploads them itself.
package copies

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"go.etcd.io/bbolt"

	"github.com/granary-dev/granary/store"
)

// Store is the store of write-back copies kept for other nodes.
// Safe for concurrent use.
//
// Layout under dir (see replicas_store.go):
//
//	replicas.db   bbolt index: primary -> bucket "/" key -> record (JSON)
//	data/<id>     one copy's bytes, named by a fresh id per Put
//	data/<id>.tmp a Put in progress
//
// Invariants: a record is committed only after its data file is complete,
// fsynced and renamed into place (and the directory fsynced); a data file
// is removed only after no committed record names it. So at every instant
// each record names a complete, durable file, and a crash leaves at worst
// temp files and unnamed data files, which Open removes.
type Store struct {
	dir    string // dir/data: the data files
	db     *bbolt.DB
	origin store.Origin
	log    zerolog.Logger

	// takeMu serialises TakeOver calls, so two takeovers of one primary
	// never upload the same copy twice at once.
	takeMu sync.Mutex
}

var _ store.Copies = (*Store)(nil)

// Errors of Put beyond the store sentinels.
var errLongBody = errors.New("copies: replica body longer than its declared size")

// Open opens (creating if needed) the replica store in dir and
// recovers what an earlier process left there (incomplete writes are
// dropped). origin is where TakeOver uploads.
func Open(dir string, origin store.Origin, log zerolog.Logger) (*Store, error) {
	if origin == nil {
		return nil, errors.New("copies: replicas need an origin")
	}
	data := filepath.Join(dir, dataDirName)
	if err := os.MkdirAll(data, store.PrivateDirMode); err != nil {
		return nil, fmt.Errorf("copies: create replica dir: %w", err)
	}
	if err := syncDir(dir); err != nil {
		return nil, fmt.Errorf("copies: sync replica dir: %w", err)
	}
	db, err := openIndex(filepath.Join(dir, indexName))
	if err != nil {
		return nil, err
	}
	r := &Store{dir: data, db: db, origin: origin, log: log.With().Str("component", "replicas").Logger()}
	if err := r.reconcile(); err != nil {
		db.Close()
		return nil, err
	}
	return r, nil
}

// Put stores body (exactly info.Size bytes, else an error and nothing
// kept) as primary's copy of info's object version (info carries Bucket,
// Key, Size, ETag, LastModified and ObjectMeta). It returns once the copy
// is durable (fsynced). A later Put of the same primary, bucket and key
// replaces it unless it is of an older version (by LastModified, the
// primary's clock): copies of one key may arrive out of order, and the
// newest is the one a takeover must upload.
//
// A short body fails with store.ErrIncompleteBody; a cancelled ctx is
// seen between reads of body (a Read that blocks is the body's to end).
// The copy being replaced stays valid until the new one is committed.
func (r *Store) Put(ctx context.Context, primary string, info store.ObjectInfo, body io.Reader) error {
	if primary == "" || info.Bucket == "" || info.Key == "" {
		return fmt.Errorf("copies: replica put needs a primary, bucket and key: %w", store.ErrInvalidKey)
	}
	if info.Size < 0 {
		return fmt.Errorf("copies: replica put of %s/%s: negative size %d", info.Bucket, info.Key, info.Size)
	}
	file, err := r.writeData(ctx, info.Size, body)
	if err != nil {
		return fmt.Errorf("copies: replica put of %s/%s: %w", info.Bucket, info.Key, err)
	}
	rec := copyRecord{
		Primary: primary, Bucket: info.Bucket, Key: info.Key, ETag: info.ETag,
		Size: info.Size, LastModified: info.LastModified, Meta: info.ObjectMeta, File: file,
	}
	// A ctx cancelled during the last read still keeps nothing.
	if err := ctx.Err(); err != nil {
		r.removeData(file)
		return fmt.Errorf("copies: replica put of %s/%s: %w", info.Bucket, info.Key, err)
	}
	old, err := r.commit(rec)
	if err != nil {
		r.removeData(file)
		return err
	}
	if old != "" {
		r.removeData(old)
	}
	return nil
}

// Drop forgets primary's copy of bucket/key if it is the version etag
// (the primary reported it at the origin); a newer copy is kept.
func (r *Store) Drop(primary, bucket, key, etag string) error {
	return r.dropIf(primary, bucket, key, func(rec copyRecord) bool { return rec.ETag == etag })
}

// TakeOver uploads every copy kept for primary (a node that died) to the
// origin and drops each one uploaded. A copy is dropped without upload
// when the origin already holds that version (same ETag) or a newer one
// (LastModified after the copy's), so a late takeover never overwrites a
// later write. Failed uploads stay for the next call; it returns how many
// were uploaded and the first error.
//
// LastModified is compared at the precision the origin reports (S3: whole
// seconds), so an origin write in the same second as the copy but after
// it is not seen as newer; the primary's own uploads normally land long
// before a takeover, and the ETag check catches those.
func (r *Store) TakeOver(ctx context.Context, primary string) (int, error) {
	return r.settle(ctx, primary, func(copyRecord) (bool, error) { return true, nil })
}

// Reconcile settles the copies kept for primary, a live member, that were
// written before before: pending asks the primary whether it still has
// a write of the key waiting for the origin (this version or a newer
// one). A copy it no longer waits on is taken over as TakeOver would (a
// primary restarted with an empty disk has lost its own; one whose drop
// message was lost has uploaded it, and the copy is dropped), so no
// acknowledged write waits on a primary that forgot it. It stops at the
// first error of pending (the primary is not answering) and returns how
// many copies it uploaded.
func (r *Store) Reconcile(ctx context.Context, primary string, before time.Time,
	pending func(ctx context.Context, bucket, key string) (bool, error)) (int, error) {
	return r.settle(ctx, primary, func(rec copyRecord) (bool, error) {
		if !rec.LastModified.Before(before) {
			return false, nil
		}
		waits, err := pending(ctx, rec.Bucket, rec.Key)
		if err != nil {
			return false, fmt.Errorf("copies: asking %s about %s/%s: %w", primary, rec.Bucket, rec.Key, err)
		}
		return !waits, nil
	})
}

// settle takes over each copy kept for primary that choose picks, one
// settle at a time (takeMu). An error of choose, or ctx's, ends the round;
// a failed upload leaves its copy for the next round. It returns how many
// copies it uploaded and the first error.
func (r *Store) settle(ctx context.Context, primary string, choose func(copyRecord) (bool, error)) (int, error) {
	r.takeMu.Lock()
	defer r.takeMu.Unlock()
	recs, err := r.list(primary)
	if err != nil {
		return 0, err
	}
	uploaded := 0
	var first error
	for _, rec := range recs {
		if err := ctx.Err(); err != nil {
			return uploaded, errors.Join(first, err)
		}
		take, err := choose(rec)
		if err != nil {
			return uploaded, errors.Join(first, err)
		}
		if !take {
			continue
		}
		up, err := r.takeOne(ctx, rec)
		if up {
			uploaded++
		}
		if err != nil {
			r.log.Warn().Err(err).Str("primary", primary).Str("bucket", rec.Bucket).
				Str("key", rec.Key).Msg("replica takeover failed; the copy stays for the next attempt")
			if first == nil {
				first = err
			}
		}
	}
	return uploaded, first
}

// takeOne settles one copy: it is dropped when the origin holds it or
// something newer, else uploaded and then dropped. It reports whether it
// uploaded. The drop is conditional on the record still naming the same
// data file, so a copy replaced meanwhile is kept.
func (r *Store) takeOne(ctx context.Context, rec copyRecord) (bool, error) {
	same := func(cur copyRecord) bool { return cur.File == rec.File }
	at, err := r.origin.Stat(ctx, rec.Bucket, rec.Key)
	switch {
	case err == nil && (at.ETag == rec.ETag || at.LastModified.After(rec.LastModified)):
		return false, r.dropIf(rec.Primary, rec.Bucket, rec.Key, same)
	case err != nil && !errors.Is(err, store.ErrNoSuchKey):
		return false, fmt.Errorf("copies: takeover stat %s/%s: %w", rec.Bucket, rec.Key, err)
	}
	f, err := os.Open(filepath.Join(r.dir, rec.File))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil // replaced or dropped since the listing
	}
	if err != nil {
		return false, fmt.Errorf("copies: takeover open copy of %s/%s: %w", rec.Bucket, rec.Key, err)
	}
	defer f.Close()
	if _, err := r.origin.Put(ctx, rec.Bucket, rec.Key, f, rec.Size, rec.Meta); err != nil {
		return false, fmt.Errorf("copies: takeover upload %s/%s: %w", rec.Bucket, rec.Key, err)
	}
	return true, r.dropIf(rec.Primary, rec.Bucket, rec.Key, same)
}

// Primaries returns the primaries this node holds copies for, sorted,
// with how many copies each. (A map has no order; callers sort its keys.)
func (r *Store) Primaries() map[string]int {
	out := map[string]int{}
	err := r.db.View(func(tx *bbolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bbolt.Bucket) error {
			// Never 0: a primary's bucket goes with its last copy.
			out[string(name)] = b.Stats().KeyN
			return nil
		})
	})
	if err != nil {
		r.log.Error().Err(err).Msg("replica index unreadable")
	}
	return out
}

// Close releases the store. It waits for index updates in progress.
func (r *Store) Close() error {
	return r.db.Close()
}
