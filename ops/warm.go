// Warm-ups: a job lists a bucket prefix at the origin into the catalog
// (so LIST under it can be answered without the origin) and, unless it
// is metadata-only, brings every object it lists into the cache tiers,
// past their admission policy. A repeated warm-up fetches only what
// changed (or what the tiers lost) and drops the cached data of objects
// changed or deleted at the origin.
package ops

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/granary-dev/granary/gateway"
	"github.com/granary-dev/granary/store"
)

// ErrNoCatalog means the engine was built without a catalog.
var ErrNoCatalog = errors.New("ops: warm-up needs a catalog")

// ErrTooBig means the cache cannot hold the prefix: the warm-up loaded
// the listing and stopped fetching instead of evicting what it fetched.
var ErrTooBig = errors.New("ops: the cache cannot hold the prefix")

// WarmSpec is what a warm-up loads.
type WarmSpec struct {
	Bucket string `json:"bucket"`
	Prefix string `json:"prefix"`
	// MetadataOnly loads the listing into the catalog and no data.
	MetadataOnly bool `json:"metadataOnly"`
	// Parallel is how many objects are fetched at once; 0 means 16.
	Parallel int `json:"parallel"`
}

// warmRun is one warm-up in progress.
type warmRun struct {
	e    *gateway.Engine
	spec WarmSpec
	st   *warmState
}

// run loads the listing and, unless metadata-only, fetches while it
// lists: objects added or changed, and unchanged ones the tiers lost.
// Once the objects listed add up to more than the cache holds, it stops
// fetching (the listing still completes) and fails with ErrTooBig.
func (w *warmRun) run(ctx context.Context) error {
	if w.spec.MetadataOnly {
		return w.load(ctx, nil)
	}
	capacity := w.e.Capacity(w.spec.Bucket)
	work := make(chan store.ObjectInfo, 1024)
	wait := w.fetchers(ctx, work)
	var total int64
	err := w.load(ctx, func(o store.ObjectInfo, kind store.ChangeKind) {
		if total += o.Size; total > capacity {
			return
		}
		if kind == store.EntryUnchanged && w.e.HoldsVersion(o) {
			w.st.skipped(o)
			return
		}
		w.st.queued(o)
		select {
		case work <- o:
		case <-ctx.Done():
		}
	})
	close(work)
	wait()
	switch {
	case err != nil:
		return err
	case ctx.Err() != nil:
		return ctx.Err()
	case total > capacity:
		return fmt.Errorf("%w: s3://%s/%s holds %d bytes, the cache (or the bucket's quota) at most %d (listing loaded; fetching stopped there)",
			ErrTooBig, w.spec.Bucket, w.spec.Prefix, total, capacity)
	}
	return w.st.failure()
}

// load lists the prefix at the origin into the catalog, dropping the
// cached data of objects removed or changed at the origin, and hands
// every object it lists to want (in key order, on the listing goroutine)
// if want is not nil.
func (w *warmRun) load(ctx context.Context, want func(store.ObjectInfo, store.ChangeKind)) error {
	e, s := w.e, w.spec
	started := time.Now()
	each := func(c store.CatalogChange) error {
		w.st.listed(c)
		switch c.Kind {
		case store.EntryRemoved:
			e.Invalidate(ctx, s.Bucket, c.Old.Key)
			return nil
		case store.EntryChanged:
			e.Invalidate(ctx, s.Bucket, c.Old.Key)
		}
		if want != nil {
			want(store.ObjectInfo{Bucket: s.Bucket, Key: c.Entry.Key, Size: c.Entry.Size,
				ETag: c.Entry.ETag, LastModified: c.Entry.LastModified}, c.Kind)
		}
		return ctx.Err()
	}
	err := e.Catalog().Load(s.Bucket, s.Prefix, started, w.lister(ctx), each)
	w.st.update(func(st *WarmStatus) { st.Listing = false })
	if err != nil {
		return fmt.Errorf("listing s3://%s/%s: %w", s.Bucket, s.Prefix, err)
	}
	return nil
}

// lister returns the origin's listing of the prefix, an object at a time.
func (w *warmRun) lister(ctx context.Context) func() (store.CatalogEntry, bool, error) {
	var page store.ListPage
	after, done := "", false
	return func() (store.CatalogEntry, bool, error) {
		for len(page.Objects) == 0 {
			if done || ctx.Err() != nil {
				return store.CatalogEntry{}, false, ctx.Err()
			}
			var err error
			page, err = w.e.ListOrigin(ctx, w.spec.Bucket, store.ListOptions{Prefix: w.spec.Prefix, After: after, MaxKeys: 1000})
			if err != nil {
				return store.CatalogEntry{}, false, err
			}
			after, done = page.NextAfter, !page.IsTruncated
		}
		o := page.Objects[0]
		page.Objects = page.Objects[1:]
		return store.CatalogEntry{Key: o.Key, Size: o.Size, ETag: o.ETag, LastModified: o.LastModified}, true, nil
	}
}

// fetchers starts Parallel goroutines that fetch the objects sent on
// work; the func returned waits for them once work is closed.
func (w *warmRun) fetchers(ctx context.Context, work <-chan store.ObjectInfo) (wait func()) {
	par := w.spec.Parallel
	if par <= 0 {
		par = 16
	}
	var wg sync.WaitGroup
	for range par {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for o := range work {
				if ctx.Err() != nil {
					continue // drain
				}
				w.st.fetched(o, w.e.WarmObject(ctx, o))
			}
		}()
	}
	return wg.Wait
}
