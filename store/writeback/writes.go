// Writes of objects and buckets: write-back buckets stage and journal,
// others pass through to the origin behind any pending operation of the
// same key; and the bucket calls.
package writeback

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/granary-dev/granary/store"
)

func (l *Log) Put(ctx context.Context, bucket, key string, body io.Reader, size int64, meta store.ObjectMeta) (store.ObjectInfo, error) {
	if l.writeBack(bucket) {
		return l.putBack(ctx, bucket, key, body, size, meta)
	}
	var info store.ObjectInfo
	err := l.direct(ctx, bucket, key, func() (err error) {
		info, err = l.origin.Put(ctx, bucket, key, body, size, meta)
		return err
	})
	return info, err
}

func (l *Log) Delete(ctx context.Context, bucket, key string) error {
	if l.writeBack(bucket) {
		return l.deleteBack(ctx, bucket, key)
	}
	return l.direct(ctx, bucket, key, func() error { return l.origin.Delete(ctx, bucket, key) })
}

// deleteBack journals a write-back delete.
func (l *Log) deleteBack(ctx context.Context, bucket, key string) error {
	if err := validKey(key); err != nil {
		return err
	}
	if err := l.checkBucket(ctx, bucket); err != nil {
		return err
	}
	done, err := l.enter()
	if err != nil {
		return err
	}
	defer done()
	o := &op{record: record{Kind: kindDelete, Bucket: bucket, Key: key,
		Info: store.ObjectInfo{Bucket: bucket, Key: key}}}
	return l.install(o)
}

// direct runs write, a pass-through write of bucket/key, after the upload
// of the key in progress (if any) and before any the key has waiting:
// those, older than the write, are superseded by it once it succeeded (if
// it fails they stay). Operations of the key accepted while write runs
// are newer and upload after it.
func (l *Log) direct(ctx context.Context, bucket, key string, write func() error) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return errClosed
	}
	ks := l.keyStateLocked(bucket, key)
	ks.direct++
	start := l.lastSeq
	l.mu.Unlock()
	err := l.awaitIdle(ctx, ks)
	if err == nil {
		err = write()
	}
	var stale *op
	l.mu.Lock()
	ks.direct--
	if err == nil && ks.next != nil && ks.next.Seq <= start {
		stale = ks.next
		ks.next = nil
	}
	var remove *op
	if stale != nil {
		remove = l.dropLocked(stale)
	}
	l.enqueueLocked(ks)
	l.tidyLocked(ks)
	l.notifyLocked()
	l.mu.Unlock()
	if stale != nil {
		if jerr := l.journalDelete(stale.Seq); jerr != nil {
			l.log.Error().Err(jerr).Str("bucket", bucket).Str("key", key).
				Msg("writeback: delete record superseded by a direct write")
		}
		l.removeStage(remove)
	}
	return err
}

// awaitIdle waits until no upload of ks is in progress (ks.direct > 0
// keeps new ones from starting).
func (l *Log) awaitIdle(ctx context.Context, ks *keyState) error {
	for {
		l.mu.Lock()
		busy, ch, closed := ks.cur != nil, l.changed, l.closed
		l.mu.Unlock()
		switch {
		case closed:
			return errClosed
		case !busy:
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (l *Log) Copy(ctx context.Context, srcBucket, srcKey, dstBucket, dstKey string, meta *store.ObjectMeta) (store.ObjectInfo, error) {
	c, isCopier := l.origin.(store.Copier)
	if isCopier && !l.writeBack(dstBucket) && l.pendingOp(srcBucket, srcKey) == nil {
		var info store.ObjectInfo
		err := l.direct(ctx, dstBucket, dstKey, func() (err error) {
			info, err = c.Copy(ctx, srcBucket, srcKey, dstBucket, dstKey, meta)
			return err
		})
		return info, err
	}
	// The source is staged here, the destination is, or the origin cannot
	// copy: the bytes go through the Log.
	rc, src, err := l.Get(ctx, srcBucket, srcKey, store.ReadRange{Length: -1})
	if err != nil {
		return store.ObjectInfo{}, err
	}
	defer rc.Close()
	m := src.ObjectMeta
	if meta != nil {
		m = *meta
	} else if m.Tags == nil && src.TagCount > 0 {
		// The origin reports only how many tags: fetch them to copy them.
		if m.Tags, err = l.ObjectTags(ctx, srcBucket, srcKey); err != nil {
			return store.ObjectInfo{}, err
		}
	}
	return l.Put(ctx, dstBucket, dstKey, rc, src.Size, m)
}

func (l *Log) ListBuckets(ctx context.Context) ([]store.BucketInfo, error) {
	return l.origin.ListBuckets(ctx)
}

func (l *Log) MakeBucket(ctx context.Context, bucket string) error {
	err := l.origin.MakeBucket(ctx, bucket)
	if err == nil {
		l.mu.Lock()
		l.known[bucket] = true
		l.mu.Unlock()
	}
	return err
}

func (l *Log) StatBucket(ctx context.Context, bucket string) error {
	return l.origin.StatBucket(ctx, bucket)
}

// RemoveBucket refuses a bucket with objects staged here. Pending deletes
// in it are flushed first (the origin would refuse a bucket that still
// holds what they delete).
func (l *Log) RemoveBucket(ctx context.Context, bucket string) error {
	l.mu.Lock()
	puts, ops := 0, 0
	for _, ks := range l.byBucket[bucket] {
		if o := ks.latest(); o != nil {
			ops++
			if o.Kind == kindPut {
				puts++
			}
		}
	}
	l.mu.Unlock()
	if puts > 0 {
		return fmt.Errorf("writeback: %w: %s has %d objects waiting for the origin", store.ErrBucketNotEmpty, bucket, puts)
	}
	if ops > 0 {
		if err := l.Flush(ctx, bucket, "", nil); err != nil {
			return err
		}
	}
	err := l.origin.RemoveBucket(ctx, bucket)
	if err == nil || errors.Is(err, store.ErrNoSuchBucket) {
		l.forgetBucket(bucket)
	}
	return err
}
