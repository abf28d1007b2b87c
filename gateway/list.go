// Bucket operations and listings, with LIST pages cached under the
// bucket's freshness rule and dropped on every write through this node.
package gateway

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/granary-dev/granary/store"
)

type listEntry struct {
	page    store.ListPage
	fetched time.Time
}

// listCache holds pages per bucket. mu guards buckets, n (the number of
// pages held) and seq (drops, as in metaCache: a page the origin gave
// before a write's drop is not stored after it); past max pages it forgets
// everything (a listing is cheap to ask again, and a bounded cache matters
// more than a clever one here).
type listCache struct {
	mu      sync.Mutex
	max     int
	n       int
	seq     uint64
	buckets map[string]map[store.ListOptions]listEntry
}

func newListCache(max int) *listCache {
	return &listCache{max: max, buckets: make(map[string]map[store.ListOptions]listEntry)}
}

func (c *listCache) get(bucket string, opts store.ListOptions) (listEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ent, ok := c.buckets[bucket][opts]
	return ent, ok
}

func (c *listCache) sequence() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seq
}

// putIf stores a page unless a drop happened since sequence returned seq.
func (c *listCache) putIf(seq uint64, bucket string, opts store.ListOptions, ent listEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seq != seq {
		return
	}
	if c.n >= c.max {
		c.buckets, c.n = make(map[string]map[store.ListOptions]listEntry), 0
	}
	pages := c.buckets[bucket]
	if pages == nil {
		pages = make(map[store.ListOptions]listEntry)
		c.buckets[bucket] = pages
	}
	if _, ok := pages[opts]; !ok {
		c.n++
	}
	pages[opts] = ent
}

func (c *listCache) dropBucket(bucket string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	c.n -= len(c.buckets[bucket])
	delete(c.buckets, bucket)
}

// dropAll drops every page.
func (c *listCache) dropAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	c.buckets, c.n = make(map[string]map[store.ListOptions]listEntry), 0
}

// List returns one page of a bucket listing. A cached page past its TTL
// is served at once and revalidated in the background, as metadata is
// (revalidate.go); otherwise a page the cache cannot answer is asked of
// the origin, within its guard's bound.
func (e *Engine) List(ctx context.Context, bucket string, opts store.ListOptions) (store.ListPage, error) {
	if opts.MaxKeys <= 0 || opts.MaxKeys > 1000 {
		opts.MaxKeys = 1000
	}
	fr := e.freshness(bucket)
	if page, ok := e.listFromCatalog(ctx, bucket, opts, fr); ok {
		return page, nil
	}
	if page, ok := e.listFromMembers(ctx, bucket, opts, fr); ok {
		return page, nil
	}
	ent, had := e.lists.get(bucket, opts)
	switch {
	case had && fr.fresh(ent.fetched, e.opts.Now()):
		return ent.page, nil
	case had && fr.revalidatesInBackground():
		e.revalidate(listKey{bucket, opts}, func(ctx context.Context) { _, _ = e.listAtOrigin(ctx, bucket, opts, fr) })
		return ent.page, nil
	}
	return e.listAtOrigin(ctx, bucket, opts, fr)
}

// listAtOrigin asks the origin for a page and caches it (unless the rule
// is always). An origin that cannot answer gets the cached page, if the
// rule serves stale ones, trusted for another TTL so an outage costs one
// origin call per TTL (stale-if-error, as loadInfo).
func (e *Engine) listAtOrigin(ctx context.Context, bucket string, opts store.ListOptions, fr Freshness) (store.ListPage, error) {
	seq := e.lists.sequence()
	stale, had := e.lists.get(bucket, opts)
	page, err := e.origin.List(ctx, bucket, opts)
	switch {
	case err == nil:
	case errors.Is(err, store.ErrNoSuchBucket):
		e.lists.dropBucket(bucket) // gone at the origin: no page of it is served again
		return page, err
	case had && unavailable(err) && !fr.NoStale:
		e.m.staleServed.Inc() // the origin's guard bounded the wait
		e.lists.putIf(seq, bucket, opts, listEntry{page: stale.page, fetched: e.opts.Now()})
		return stale.page, nil
	default:
		return page, err
	}
	if fr.Mode != Always {
		e.lists.putIf(seq, bucket, opts, listEntry{page: page, fetched: e.opts.Now()})
	}
	return page, nil
}

// ListBuckets lists the origin's buckets.
func (e *Engine) ListBuckets(ctx context.Context) ([]store.BucketInfo, error) {
	return e.origin.ListBuckets(ctx)
}

// CreateBucket creates a bucket at the origin.
func (e *Engine) CreateBucket(ctx context.Context, bucket string) error {
	return e.origin.MakeBucket(ctx, bucket)
}

// DeleteBucket removes an empty bucket at the origin.
func (e *Engine) DeleteBucket(ctx context.Context, bucket string) error {
	if err := e.writable(bucket); err != nil {
		return err
	}
	err := e.origin.RemoveBucket(ctx, bucket)
	if err == nil {
		e.lists.dropBucket(bucket)
		if e.opts.Catalog != nil {
			if derr := e.opts.Catalog.DropBucket(bucket); derr != nil {
				e.log.Error().Err(derr).Str("bucket", bucket).Msg("catalog: dropping the bucket failed")
			}
		}
	}
	return err
}

// HeadBucket returns nil if the bucket exists.
func (e *Engine) HeadBucket(ctx context.Context, bucket string) error {
	return e.origin.StatBucket(ctx, bucket)
}
