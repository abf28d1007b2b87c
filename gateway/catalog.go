// The catalog seen from the engine: LIST under a covered prefix answered
// from it while the bucket's freshness rule allows, and writes through
// this node, or through another member, recorded in it so those answers
// include them.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/granary-dev/granary/store"
)

// listFromCatalog answers a LIST page from the catalog if it covers the
// prefix and the bucket's rule trusts a listing that old: immutable
// always, ttl within the TTL of the load, always never. ok is false when
// the origin must be asked.
func (e *Engine) listFromCatalog(ctx context.Context, bucket string, opts store.ListOptions, fr Freshness) (store.ListPage, bool) {
	c := e.opts.Catalog
	if c == nil || fr.Mode == Always {
		return store.ListPage{}, false
	}
	at, ok := c.Covered(bucket, opts.Prefix)
	if !ok || !fr.fresh(at, e.opts.Now()) {
		return store.ListPage{}, false
	}
	page, err := c.List(bucket, opts)
	if err != nil {
		e.logFor(ctx).Warn().Err(err).Str("bucket", bucket).Msg("catalog list failed; asking the origin")
		return store.ListPage{}, false
	}
	e.m.listIndexed.Inc()
	return page, true
}

// catalogInfo is the object's info from the catalog, for when the origin
// cannot be asked: what a listing shows (size, ETag, last-modified), with
// the default content type and no user metadata, which listings lack.
func (e *Engine) catalogInfo(ctx context.Context, bucket, key string) (store.ObjectInfo, bool) {
	if e.opts.Catalog == nil {
		return store.ObjectInfo{}, false
	}
	ent, ok, err := e.opts.Catalog.Get(bucket, key)
	if err != nil || !ok {
		return store.ObjectInfo{}, false
	}
	e.logFor(ctx).Warn().Str("bucket", bucket).Str("key", key).Msg("origin unavailable; serving metadata from the catalog")
	return store.ObjectInfo{Bucket: bucket, Key: key, Size: ent.Size, ETag: ent.ETag, LastModified: ent.LastModified,
		ObjectMeta: store.ObjectMeta{ContentType: store.DefaultContentType}}, true
}

// recordWrite notes in the catalog an object written through this node.
// An origin that does not say when it stored the object gets now, which
// is within the request's time of the truth.
func (e *Engine) recordWrite(info store.ObjectInfo) {
	if e.opts.Catalog == nil || info.ETag == "" {
		return
	}
	mod := info.LastModified
	if mod.IsZero() {
		mod = time.Now().UTC().Truncate(time.Second)
	}
	ent := store.CatalogEntry{Key: info.Key, Size: info.Size, ETag: info.ETag, LastModified: mod}
	if err := e.opts.Catalog.Put(info.Bucket, ent); err != nil {
		e.catalogFailed(info.Bucket, err)
	}
}

// recordDelete notes in the catalog an object deleted through this node.
func (e *Engine) recordDelete(bucket, key string) {
	if e.opts.Catalog == nil {
		return
	}
	if err := e.opts.Catalog.Delete(bucket, key); err != nil {
		e.catalogFailed(bucket, err)
	}
}

// catalogChanged keeps the catalog true to a change of bucket/key made
// through another member, if it covers the key: a version the member sent
// is recorded; otherwise (a write-through write or a delete, whose outcome
// the member does not send) the key is looked up at the origin and
// recorded as found. Both happen before the member's forget is answered,
// so a LIST after the write, through any member, shows it. The caller
// holds the key's forget lock. An origin that cannot say drops the
// bucket's listing (LIST goes to the origin until the next warm-up).
func (e *Engine) catalogChanged(bucket, key string, written *store.ObjectInfo) {
	c := e.opts.Catalog
	if c == nil {
		return
	}
	if _, ok := c.Covered(bucket, key); !ok {
		return
	}
	if written != nil {
		e.recordWrite(*written)
		return
	}
	ctx, cancel := context.WithTimeout(e.fillCtx, time.Minute)
	defer cancel()
	info, err := e.origin.Stat(ctx, bucket, key)
	switch {
	case err == nil:
		e.recordWrite(info)
	case errors.Is(err, store.ErrNoSuchKey):
		e.recordDelete(bucket, key)
	case e.fillCtx.Err() == nil:
		e.catalogFailed(bucket, fmt.Errorf("looking up %s, changed through a member: %w", key, err))
	}
}

// catalogFailed handles a catalog that could not record a write: its
// listing of the bucket can no longer be trusted, so the bucket is
// dropped from it (LIST goes to the origin until the next warm-up).
func (e *Engine) catalogFailed(bucket string, err error) {
	e.log.Error().Err(err).Str("bucket", bucket).Msg("catalog write failed; forgetting the bucket's listing")
	if derr := e.opts.Catalog.DropBucket(bucket); derr != nil {
		e.log.Error().Err(derr).Str("bucket", bucket).Msg("catalog: dropping the bucket failed")
	}
}
