// Tags and part ranges through the write-back log: tags live with the
// object at the origin, so an object still staged here answers with the
// tags it was written with, and new tags wait for it to reach the origin
// first. Part ranges of a staged object come from the part sizes its
// completion recorded, the others' from the origin.
package writeback

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/granary-dev/granary/store"
)

var _ store.Tagger = (*Log)(nil)

// tagger returns the origin's Tagger, or store.ErrNotSupported.
func (l *Log) tagger() (store.Tagger, error) {
	if t, ok := l.origin.(store.Tagger); ok {
		return t, nil
	}
	return nil, store.ErrNotSupported
}

// ObjectTags returns the tags of bucket/key: a pending put's, else the
// origin's.
func (l *Log) ObjectTags(ctx context.Context, bucket, key string) (map[string]string, error) {
	if o := l.pendingOp(bucket, key); o != nil {
		if o.Kind == kindDelete {
			return nil, noSuchKey(bucket, key)
		}
		tags := maps.Clone(o.Info.Tags)
		if tags == nil {
			tags = map[string]string{}
		}
		return tags, nil
	}
	t, err := l.tagger()
	if err != nil {
		return nil, err
	}
	return t.ObjectTags(ctx, bucket, key)
}

// tagFlushWait bounds how long tagging waits for the object to reach the
// origin; past it the origin is taken as unavailable (the client retries).
var tagFlushWait = 30 * time.Second

// SetObjectTags waits for the writes of bucket/key accepted so far to
// reach the origin (at most tagFlushWait), then sets the tags there.
func (l *Log) SetObjectTags(ctx context.Context, bucket, key string, tags map[string]string) error {
	t, err := l.tagger()
	if err != nil {
		return err
	}
	if l.pendingOp(bucket, key) != nil {
		fctx, cancel := context.WithTimeout(ctx, tagFlushWait)
		err := l.Flush(fctx, bucket, key, nil)
		cancel()
		if err != nil && ctx.Err() == nil {
			return fmt.Errorf("writeback: %s/%s is not at the origin yet: %w (%v)", bucket, key, store.ErrUnavailable, err)
		}
		if err != nil {
			return err
		}
	}
	return t.SetObjectTags(ctx, bucket, key, tags)
}

// BucketTags returns the origin's tags of bucket.
func (l *Log) BucketTags(ctx context.Context, bucket string) (map[string]string, error) {
	t, err := l.tagger()
	if err != nil {
		return nil, err
	}
	return t.BucketTags(ctx, bucket)
}

// SetBucketTags sets the origin's tags of bucket.
func (l *Log) SetBucketTags(ctx context.Context, bucket string, tags map[string]string) error {
	t, err := l.tagger()
	if err != nil {
		return err
	}
	return t.SetBucketTags(ctx, bucket, tags)
}

var _ store.PartLocator = (*Log)(nil)

// PartRange returns where part n of bucket/key lies: from the part sizes
// recorded at completion for an object still staged here (one part for
// one written whole), from the origin otherwise.
func (l *Log) PartRange(ctx context.Context, bucket, key string, n int) (int64, int64, int, error) {
	if o := l.pendingOp(bucket, key); o != nil {
		if o.Kind == kindDelete {
			return 0, 0, 0, noSuchKey(bucket, key)
		}
		sizes := []int64{o.Info.Size}
		if o.Multipart {
			sizes = make([]int64, len(o.Parts))
			for i, p := range o.Parts {
				sizes[i] = p.Size
			}
		}
		return store.PartOf(sizes, n)
	}
	pl, ok := l.origin.(store.PartLocator)
	if !ok {
		return 0, 0, 0, store.ErrNotSupported
	}
	return pl.PartRange(ctx, bucket, key, n)
}
