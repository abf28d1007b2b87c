// Stale-while-revalidate: metadata and listings past their TTL are served
// at once and revalidated in the background, one revalidation per entry
// in flight and at most maxRevalidations at a time, so a slow or hung
// origin never slows a request for what the cache holds.
package gateway

import (
	"context"
	"sync"

	"github.com/granary-dev/granary/store"
)

// maxRevalidations bounds the background revalidations in flight; past
// it a stale entry is served without one (a later request starts it).
const maxRevalidations = 64

// revalidations are the entries being revalidated in the background,
// keyed by metaKey (an object's metadata) or listKey (a listing page).
type revalidations struct {
	mu   sync.Mutex // guards keys
	keys map[any]struct{}
}

// listKey names a listing page among the revalidations.
type listKey struct {
	bucket string
	opts   store.ListOptions
}

// revalidatesInBackground reports whether an entry past f's rule is
// served at once and revalidated in the background: a ttl bucket that
// may serve stale metadata. Otherwise the request waits for the origin.
func (f Freshness) revalidatesInBackground() bool { return f.Mode == TTL && !f.NoStale }

// revalidate runs fetch in the background under key k unless a
// revalidation of k is in flight or maxRevalidations are. fetch runs on
// the engine's fill context (Close cancels it and waits), bounded by
// FetchTimeout.
func (e *Engine) revalidate(k any, fetch func(ctx context.Context)) {
	r := &e.revals
	r.mu.Lock()
	if _, busy := r.keys[k]; busy || len(r.keys) >= maxRevalidations || e.fillCtx.Err() != nil {
		r.mu.Unlock()
		return
	}
	if r.keys == nil {
		r.keys = make(map[any]struct{})
	}
	r.keys[k] = struct{}{}
	e.fills.Add(1)
	r.mu.Unlock()
	e.m.revalidations.Inc()
	go func() {
		defer e.fills.Done()
		defer func() {
			r.mu.Lock()
			delete(r.keys, k)
			r.mu.Unlock()
		}()
		ctx, cancel := context.WithTimeout(e.fillCtx, e.opts.FetchTimeout)
		defer cancel()
		fetch(ctx)
	}()
}

// revalidateInfo revalidates bucket/key's metadata in the background; it
// joins a load of the key already in flight rather than asking twice.
func (e *Engine) revalidateInfo(bucket, key string) {
	k := metaKey(bucket, key)
	e.revalidate(k, func(ctx context.Context) {
		e.sf.Do(k, func() (any, error) { return e.loadInfo(ctx, bucket, key, wantNoChunk) })
	})
}

// revalidating reports how many background revalidations are in flight.
func (e *Engine) revalidating() int {
	e.revals.mu.Lock()
	defer e.revals.mu.Unlock()
	return len(e.revals.keys)
}
