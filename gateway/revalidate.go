// Stale-while-revalidate: metadata past its TTL is served at once and
// revalidated in the background, one revalidation per key in flight and
// at most maxRevalidations at a time, so a slow or hung origin never
// slows a read of what the cache holds.
package gateway

import (
	"context"
	"sync"
)

// maxRevalidations bounds the background revalidations in flight; past
// it a stale entry is served without one (a later request starts it).
const maxRevalidations = 64

// revalidations are the keys being revalidated in the background.
type revalidations struct {
	mu   sync.Mutex // guards keys
	keys map[string]struct{}
}

// revalidate starts a background revalidation of bucket/key unless one
// is in flight or maxRevalidations are. It runs on the engine's fill
// context (Close cancels it and waits), bounded by FetchTimeout; it joins
// a load of the key already in flight rather than asking twice.
func (e *Engine) revalidate(bucket, key string) {
	k := metaKey(bucket, key)
	r := &e.revals
	r.mu.Lock()
	if _, busy := r.keys[k]; busy || len(r.keys) >= maxRevalidations || e.fillCtx.Err() != nil {
		r.mu.Unlock()
		return
	}
	if r.keys == nil {
		r.keys = make(map[string]struct{})
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
		e.sf.Do(k, func() (any, error) { return e.loadInfo(ctx, bucket, key, wantNoChunk) })
	}()
}

// revalidating reports how many background revalidations are in flight.
func (e *Engine) revalidating() int {
	e.revals.mu.Lock()
	defer e.revals.mu.Unlock()
	return len(e.revals.keys)
}
