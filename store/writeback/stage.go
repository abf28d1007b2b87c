// Staging: a write-back Put becomes a one-part upload of the stage store,
// sealed (durable) before it is journaled. Bodies of unknown size are
// spooled to a temp file first, so their size is known (and counted
// against the dirty limit) before they are staged.
package writeback

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
	"unicode/utf8"

	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/parts"
)

// maxKeyLen is S3's limit on key length, in bytes.
const maxKeyLen = 1024

// validKey applies S3's key rules to a write that is acknowledged before
// the origin sees it (the origin checks every other call itself).
func validKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("writeback: %w: empty key", store.ErrInvalidKey)
	case len(key) > maxKeyLen:
		return fmt.Errorf("writeback: %w: key longer than %d bytes", store.ErrInvalidKey, maxKeyLen)
	case !utf8.ValidString(key):
		return fmt.Errorf("writeback: %w: key is not valid UTF-8", store.ErrInvalidKey)
	}
	return nil
}

// checkBucket makes sure a write-back write goes to a bucket the origin
// has. A bucket seen once is remembered (until removed through the Log or
// an upload finds it gone). An origin that cannot be asked does not stop
// the write, and the bucket is taken as known (so the next writes do not
// wait for the origin to fail again): riding out origin outages is what
// write-back is for, and an upload to a bucket that turns out missing
// fails, stays journaled, shows in Flush and makes the bucket unknown.
func (l *Log) checkBucket(ctx context.Context, bucket string) error {
	l.mu.Lock()
	ok := l.known[bucket]
	l.mu.Unlock()
	if ok {
		return nil
	}
	err := l.origin.StatBucket(ctx, bucket)
	switch {
	case err == nil:
		l.mu.Lock()
		l.known[bucket] = true
		l.mu.Unlock()
		return nil
	case errors.Is(err, store.ErrNoSuchBucket), errors.Is(err, store.ErrInvalidBucketName),
		errors.Is(err, store.ErrAccessDenied), ctx.Err() != nil:
		return err
	}
	l.log.Warn().Err(err).Str("bucket", bucket).Msg("writeback: cannot check bucket at the origin; accepting the write")
	l.mu.Lock()
	l.known[bucket] = true
	l.mu.Unlock()
	return nil
}

// forgetBucket drops bucket from the buckets known to exist.
func (l *Log) forgetBucket(bucket string) {
	l.mu.Lock()
	delete(l.known, bucket)
	l.mu.Unlock()
}

// putBack stages a write-back Put and journals it.
func (l *Log) putBack(ctx context.Context, bucket, key string, body io.Reader, size int64, meta store.ObjectMeta) (store.ObjectInfo, error) {
	if err := validKey(key); err != nil {
		return store.ObjectInfo{}, err
	}
	if err := l.checkBucket(ctx, bucket); err != nil {
		return store.ObjectInfo{}, err
	}
	done, err := l.enter()
	if err != nil {
		return store.ObjectInfo{}, err
	}
	defer done()
	meta = meta.Normalized()
	reserved := int64(0)
	if size >= 0 {
		if err := l.reserve(size); err != nil {
			return store.ObjectInfo{}, fmt.Errorf("writeback: put %s/%s (%d bytes): %w", bucket, key, size, err)
		}
		reserved = size
	} else {
		f, n, err := l.spool(ctx, body)
		reserved = n
		if err != nil {
			l.release(reserved)
			return store.ObjectInfo{}, fmt.Errorf("writeback: put %s/%s: %w", bucket, key, err)
		}
		defer f.Close()
		body, size = f, n
	}
	asm, err := l.stageOne(ctx, bucket, key, body, size, meta)
	if err != nil {
		l.release(reserved)
		return store.ObjectInfo{}, fmt.Errorf("writeback: put %s/%s: %w", bucket, key, err)
	}
	o := &op{record: record{
		Kind: kindPut, Bucket: bucket, Key: key, StageID: asm.UploadID, Parts: asm.Parts,
		Info: store.ObjectInfo{
			Bucket: bucket, Key: key, Size: size, ETag: asm.Parts[0].ETag,
			LastModified: time.Now().UTC(), ObjectMeta: meta,
		},
	}, asm: asm, dirty: reserved}
	if err := l.replicate(ctx, o); err != nil {
		asm.Remove()
		l.release(reserved)
		return store.ObjectInfo{}, err
	}
	if err := l.install(o); err != nil {
		asm.Remove()
		l.release(reserved)
		return store.ObjectInfo{}, err
	}
	return servedInfo(o), nil
}

// stageOne stores body as a sealed one-part upload of the puts store.
func (l *Log) stageOne(ctx context.Context, bucket, key string, body io.Reader, size int64, meta store.ObjectMeta) (*parts.Assembly, error) {
	id, err := l.puts.Create(bucket, key, meta)
	if err != nil {
		return nil, err
	}
	part, err := l.puts.PutPart(ctx, bucket, key, id, 1, body, size)
	if err != nil {
		l.puts.Abort(bucket, key, id)
		return nil, err
	}
	asm, err := l.puts.Assemble(bucket, key, id, []store.CompletePart{{Number: 1, ETag: part.ETag}})
	if err != nil {
		l.puts.Abort(bucket, key, id)
		return nil, err
	}
	if err := asm.Seal(); err != nil {
		asm.Remove()
		return nil, err
	}
	return asm, nil
}

// spool copies a body of unknown size to a temp file (unlinked at once:
// it lives until closed), reserving dirty bytes as they arrive, and
// returns the file rewound, with its size. The bytes reserved are n, also
// on failure (the caller releases them).
func (l *Log) spool(ctx context.Context, body io.Reader) (f *os.File, n int64, err error) {
	f, err = os.CreateTemp(l.tmpDir, "spool-")
	if err != nil {
		return nil, 0, err
	}
	os.Remove(f.Name())
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	buf := make([]byte, 256<<10)
	for {
		if err := ctx.Err(); err != nil {
			return nil, n, err
		}
		k, rerr := body.Read(buf)
		if k > 0 {
			if err := l.reserve(int64(k)); err != nil {
				return nil, n, err
			}
			n += int64(k)
			if _, err := f.Write(buf[:k]); err != nil {
				return nil, n, err
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return nil, n, fmt.Errorf("read body: %w", rerr)
		}
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, n, err
	}
	return f, n, nil
}
