// What operations built on the engine (package ops) read of it: its
// tiers, catalog and quotas, and the chunk lookups per bucket.
package gateway

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/granary-dev/granary/store"
)

// NamedTier is one of the engine's tiers: "ram", "hot" or "disk".
type NamedTier struct {
	Name string
	store.Tier
}

// Copies reports whether the tier holds copies of chunks other members
// own (a hot tier, in RAM or on disk) rather than this node's own.
func (t NamedTier) Copies() bool { return t.Name == "hot" || t.Name == "hot-disk" }

// Tiers returns the engine's tiers: RAM, hot, disk, then hot copies on
// disk.
func (e *Engine) Tiers() []NamedTier {
	var ts []NamedTier
	for _, t := range []NamedTier{{"ram", e.opts.RAM}, {"hot", e.opts.Hot}, {"disk", e.opts.Disk}, {"hot-disk", e.opts.HotDisk}} {
		if t.Tier != nil {
			ts = append(ts, t)
		}
	}
	return ts
}

// Started is when the engine was built.
func (e *Engine) Started() time.Time { return e.started }

// Catalog returns the engine's catalog, or nil if it has none.
func (e *Engine) Catalog() store.Catalog { return e.opts.Catalog }

// Quota is bucket's cap per tier; 0 means none.
func (e *Engine) Quota(bucket string) int64 {
	if e.opts.Quotas == nil {
		return 0
	}
	return max(0, e.opts.Quotas.Quota(bucket))
}

// Lookups counts bucket's chunk lookups for client reads since the
// engine started: those a tier answered and those it did not (a
// warm-up's or a fill's are not counted: see plan.client).
func (e *Engine) Lookups(bucket string) (hits, misses int64) {
	c := e.buckets.of(bucket)
	return c.hits.Load(), c.misses.Load()
}

// LookedUp returns the buckets with chunk lookups, sorted.
func (e *Engine) LookedUp() []string {
	var names []string
	e.buckets.m.Range(func(k, _ any) bool { names = append(names, k.(string)); return true })
	slices.Sort(names)
	return names
}

// bucketCounts are a bucket's chunk lookups, and its hit counters in
// each tier once a hit looked them up (every lookup of a tier's returns
// the same pair, so a race between two lookups stores equal values).
type bucketCounts struct {
	hits, misses atomic.Int64
	hit          [len(hitTiers)]atomic.Pointer[hitSeries]
}

// bucketStats maps bucket names to their counts.
type bucketStats struct{ m sync.Map }

func (b *bucketStats) of(bucket string) *bucketCounts {
	if c, ok := b.m.Load(bucket); ok {
		return c.(*bucketCounts)
	}
	c, _ := b.m.LoadOrStore(bucket, &bucketCounts{})
	return c.(*bucketCounts)
}
