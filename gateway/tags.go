// Object and bucket tags: kept by the origin (store.Tagger), never cached
// here; only the tag count rides along in an object's cached metadata,
// which a change of tags drops.
package gateway

import (
	"context"

	"github.com/granary-dev/granary/store"
)

// tagger returns the origin's Tagger, or store.ErrNotSupported.
func (e *Engine) tagger() (store.Tagger, error) {
	if t, ok := e.opts.Origin.(store.Tagger); ok {
		return t, nil
	}
	return nil, store.ErrNotSupported
}

// ObjectTags returns the tags of bucket/key, from the origin.
func (e *Engine) ObjectTags(ctx context.Context, bucket, key string) (map[string]string, error) {
	t, err := e.tagger()
	if err != nil {
		return nil, err
	}
	return t.ObjectTags(ctx, bucket, key)
}

// SetObjectTags replaces the tags of bucket/key at the origin (none:
// removes them) and drops the object's cached metadata, which holds its
// tag count. Alone, a node keeps the object's chunks (the tags do not
// change its bytes or ETag); in a cluster the members are told to forget
// the object as after a write, the one message they have for it.
func (e *Engine) SetObjectTags(ctx context.Context, bucket, key string, tags map[string]string) error {
	if err := e.writable(bucket); err != nil {
		return err
	}
	t, err := e.tagger()
	if err != nil {
		return err
	}
	err = t.SetObjectTags(ctx, bucket, key, tags)
	if !e.peer.solo {
		e.invalidate(ctx, bucket, key, nil)
	} else {
		e.meta.drop(metaKey(bucket, key))
		e.sf.Forget(metaKey(bucket, key))
	}
	return err
}

// BucketTags returns the tags of bucket (nil: none), from the origin.
func (e *Engine) BucketTags(ctx context.Context, bucket string) (map[string]string, error) {
	t, err := e.tagger()
	if err != nil {
		return nil, err
	}
	return t.BucketTags(ctx, bucket)
}

// SetBucketTags replaces the tags of bucket at the origin (none: removes
// them).
func (e *Engine) SetBucketTags(ctx context.Context, bucket string, tags map[string]string) error {
	t, err := e.tagger()
	if err != nil {
		return err
	}
	return t.SetBucketTags(ctx, bucket, tags)
}
