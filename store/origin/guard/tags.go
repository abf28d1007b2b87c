// Tags and part ranges under the guard. Every guarded origin has them:
// an origin that keeps no tags, or cannot locate parts, answers
// store.ErrNotSupported, as the write-back log does, so the guard never
// hides an ability of the origin it wraps.
package guard

import (
	"context"

	"github.com/granary-dev/granary/store"
)

var (
	_ store.Tagger      = (*guarded)(nil)
	_ store.PartLocator = (*guarded)(nil)
)

// tagger is the guarded origin's Tagger, or store.ErrNotSupported.
func (o *guarded) tagger() (store.Tagger, error) {
	if t, ok := o.g.inner.(store.Tagger); ok {
		return t, nil
	}
	return nil, store.ErrNotSupported
}

func (o *guarded) ObjectTags(ctx context.Context, bucket, key string) (tags map[string]string, err error) {
	t, err := o.tagger()
	if err != nil {
		return nil, err
	}
	err = o.g.bounded(ctx, func(ctx context.Context) error { tags, err = t.ObjectTags(ctx, bucket, key); return err })
	return tags, err
}

func (o *guarded) SetObjectTags(ctx context.Context, bucket, key string, tags map[string]string) error {
	t, err := o.tagger()
	if err != nil {
		return err
	}
	return o.g.bounded(ctx, func(ctx context.Context) error { return t.SetObjectTags(ctx, bucket, key, tags) })
}

func (o *guarded) BucketTags(ctx context.Context, bucket string) (tags map[string]string, err error) {
	t, err := o.tagger()
	if err != nil {
		return nil, err
	}
	err = o.g.bounded(ctx, func(ctx context.Context) error { tags, err = t.BucketTags(ctx, bucket); return err })
	return tags, err
}

func (o *guarded) SetBucketTags(ctx context.Context, bucket string, tags map[string]string) error {
	t, err := o.tagger()
	if err != nil {
		return err
	}
	return o.g.bounded(ctx, func(ctx context.Context) error { return t.SetBucketTags(ctx, bucket, tags) })
}

func (o *guarded) PartRange(ctx context.Context, bucket, key string, n int) (off, length int64, parts int, err error) {
	pl, ok := o.g.inner.(store.PartLocator)
	if !ok {
		return 0, 0, 0, store.ErrNotSupported
	}
	err = o.g.bounded(ctx, func(ctx context.Context) error {
		off, length, parts, err = pl.PartRange(ctx, bucket, key, n)
		return err
	})
	return off, length, parts, err
}
