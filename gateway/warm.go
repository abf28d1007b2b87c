// Admitting whole objects, for warm-ups (package ops drives them): an
// object's every chunk brought into the tiers past their admission
// policy, and what the tiers hold of a version.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/granary-dev/granary/store"
)

// WarmObject brings o's metadata into the metadata cache (with its first
// chunk, in the same origin call, when the tiers hold none of it) and
// every chunk into the tiers, admitted whatever their policy. It fails if
// the object is no longer o's version at the origin.
func (e *Engine) WarmObject(ctx context.Context, o store.ObjectInfo) error {
	info, first, err := e.objectInfo(ctx, o.Bucket, o.Key, wantKept)
	if err != nil {
		return fmt.Errorf("%s: %w", o.Key, err)
	}
	if info.ETag != o.ETag {
		first.release()
		return fmt.Errorf("%s changed at the origin during the warm-up", o.Key)
	}
	start := int64(0)
	if first.fl != nil {
		// The load fetched chunk 0 as a keep flight, which stores it.
		err := first.stored(ctx, e.chunkLen(info.Size, 0))
		first.release()
		if err != nil {
			return fmt.Errorf("%s: %w", o.Key, err)
		}
		start = 1
	}
	for idx := start; idx*e.opts.ChunkSize < info.Size; idx++ {
		n := e.chunkLen(info.Size, idx)
		w := newWalker(forWarm, e.chunkID(info, idx), n, wantKept)
		w.lends = true // a chunk RAM holds is lent (its lease released at once), not copied
		if got, ok := e.walk(&w); ok {
			release(got.ref.lease)
			continue // the tiers hold it
		}
		e.yieldToWrites(ctx) // the plan's pause
		got, _ := e.walk(&w) // its plan ends at the flight rung
		ref := got.ref
		err := ref.stored(ctx, n)
		release(ref.lease)
		if err != nil {
			if errors.Is(err, store.ErrPreconditionFailed) {
				return fmt.Errorf("%s changed at the origin during the warm-up: %w", o.Key, err)
			}
			return fmt.Errorf("%s: %w", o.Key, err)
		}
		if e.filler != nil {
			e.filler.waitRoom(ctx, n)
		}
	}
	return ctx.Err()
}

// HoldsVersion reports whether a tier holds chunks of o's version.
func (e *Engine) HoldsVersion(o store.ObjectInfo) bool {
	for _, t := range []store.Tier{e.opts.RAM, e.opts.Disk} {
		if vl, ok := t.(store.VersionLister); ok && slices.Contains(vl.Versions(o.Bucket, o.Key), o.ETag) {
			return true
		}
	}
	return false
}

// Capacity is the most the tiers hold of bucket's distinct data: the
// larger of the two tiers (a chunk in RAM is also queued for the disk),
// or the bucket's quota if that is less.
func (e *Engine) Capacity(bucket string) int64 {
	var c int64
	for _, t := range []store.Tier{e.opts.RAM, e.opts.Disk} {
		if t != nil {
			c = max(c, t.Stats().CapacityBytes)
		}
	}
	if q := e.Quota(bucket); q > 0 {
		c = min(c, q)
	}
	return c
}

// ListOrigin lists bucket at the origin itself, past the catalog and the
// listing cache.
func (e *Engine) ListOrigin(ctx context.Context, bucket string, opts store.ListOptions) (store.ListPage, error) {
	return e.origin.List(ctx, bucket, opts)
}

// Invalidate drops everything this node and its peers cache of
// bucket/key, after the origin's copy changed or went.
func (e *Engine) Invalidate(ctx context.Context, bucket, key string) {
	e.invalidate(ctx, bucket, key, nil)
}
