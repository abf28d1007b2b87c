// Status of a node for operators and schedulers: its tiers, and per
// bucket what the catalog knows (objects, bytes), how much of it is
// cached and in which tier, the hit rate, and the warm-up jobs.
package gateway

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/granary-dev/granary/store"
)

// TierStatus is one cache tier's usage.
type TierStatus struct {
	Name string `json:"name"`
	store.TierStats
}

// BucketStatus is what the node knows and holds of one bucket (under
// Prefix, if one was asked for).
type BucketStatus struct {
	Bucket string `json:"bucket"`
	Prefix string `json:"prefix,omitempty"`
	// Covered are the prefixes whose listing the catalog holds, with
	// when they were listed at the origin.
	Covered []CoveredPrefix `json:"covered,omitempty"`
	// Objects and Bytes the catalog knows; Cached of those bytes held
	// by some tier, and per tier.
	Objects       int64            `json:"objects"`
	Bytes         int64            `json:"bytes"`
	Cached        int64            `json:"cachedBytes"`
	CachedPercent float64          `json:"cachedPercent"`
	CachedByTier  map[string]int64 `json:"cachedByTier"`
	// Pinned are the bucket's pinned prefixes; PinnedCached the cached
	// bytes of catalog objects under them.
	Pinned       []string `json:"pinned,omitempty"`
	PinnedCached int64    `json:"pinnedCachedBytes"`
	// TierBytes is what each tier holds of the whole bucket; Quota its
	// cap per tier (0: none).
	TierBytes map[string]int64 `json:"tierBytes"`
	Quota     int64            `json:"quota,omitempty"`
	// Hits and Misses count chunk lookups of the bucket since start.
	Hits    int64   `json:"hits"`
	Misses  int64   `json:"misses"`
	HitRate float64 `json:"hitRate"`
}

// CoveredPrefix is a prefix the catalog lists without the origin.
type CoveredPrefix struct {
	Prefix string    `json:"prefix"`
	At     time.Time `json:"listedAt"`
}

// Status is a node's report.
type Status struct {
	Started time.Time      `json:"started"`
	Tiers   []TierStatus   `json:"tiers"`
	Buckets []BucketStatus `json:"buckets"`
	Warm    []WarmStatus   `json:"warmups"`
	// Object is what the node holds of one object, when asked.
	Object *ObjectHeld `json:"object,omitempty"`
}

// ObjectHeld is how much of an object's current version a node holds,
// per tier (the most of any tier is what it can serve without asking).
type ObjectHeld struct {
	Bucket string           `json:"bucket"`
	Key    string           `json:"key"`
	ETag   string           `json:"etag"`
	Size   int64            `json:"size"`
	Held   int64            `json:"heldBytes"`
	ByTier map[string]int64 `json:"heldByTier"`
}

// HeldObject reports what the tiers hold of bucket/key's current version.
func (e *Engine) HeldObject(ctx context.Context, bucket, key string) (ObjectHeld, error) {
	info, err := e.Head(ctx, bucket, key)
	if err != nil {
		return ObjectHeld{}, err
	}
	oh := ObjectHeld{Bucket: bucket, Key: key, ETag: info.ETag, Size: info.Size, ByTier: map[string]int64{}}
	for name, t := range map[string]store.Tier{"ram": e.opts.RAM, "hot": e.opts.Hot, "disk": e.opts.Disk} {
		if h, ok := t.(store.Holder); ok {
			n := h.Held(bucket, key, info.ETag)
			oh.ByTier[name] = n
			oh.Held = max(oh.Held, n)
		}
	}
	return oh, nil
}

// bucketCounts are a bucket's chunk lookups.
type bucketCounts struct{ hits, misses atomic.Int64 }

// bucketStats maps bucket names to their counts.
type bucketStats struct{ m sync.Map }

func (b *bucketStats) of(bucket string) *bucketCounts {
	if c, ok := b.m.Load(bucket); ok {
		return c.(*bucketCounts)
	}
	c, _ := b.m.LoadOrStore(bucket, &bucketCounts{})
	return c.(*bucketCounts)
}

// Status reports the node; with a bucket, that bucket (under prefix)
// only, else every bucket the catalog covers or that had lookups. The
// cached figures walk the catalog's entries: a second or so per million
// objects.
func (e *Engine) Status(ctx context.Context, bucket, prefix string) (Status, error) {
	st := Status{Started: e.started, Warm: e.WarmJobs()}
	for name, t := range map[string]store.Tier{"ram": e.opts.RAM, "hot": e.opts.Hot, "disk": e.opts.Disk} {
		if t != nil {
			st.Tiers = append(st.Tiers, TierStatus{Name: name, TierStats: t.Stats()})
		}
	}
	slices.SortFunc(st.Tiers, func(a, b TierStatus) int { return cmpString(b.Name, a.Name) }) // ram first
	names, err := e.statusBuckets(bucket)
	if err != nil {
		return st, err
	}
	for _, b := range names {
		bs, err := e.bucketStatus(ctx, b, prefix)
		if err != nil {
			return st, err
		}
		st.Buckets = append(st.Buckets, bs)
	}
	return st, nil
}

// statusBuckets lists the buckets a status reports.
func (e *Engine) statusBuckets(bucket string) ([]string, error) {
	if bucket != "" {
		return []string{bucket}, nil
	}
	var names []string
	if e.opts.Catalog != nil {
		cov, err := e.opts.Catalog.Coverage("")
		if err != nil {
			return nil, err
		}
		for _, c := range cov {
			names = append(names, c.Bucket)
		}
	}
	e.buckets.m.Range(func(k, _ any) bool { names = append(names, k.(string)); return true })
	slices.Sort(names)
	return slices.Compact(names), nil
}

// bucketStatus walks the catalog under bucket/prefix and asks the tiers
// how much of each object version they hold.
func (e *Engine) bucketStatus(ctx context.Context, bucket, prefix string) (BucketStatus, error) {
	bs := BucketStatus{Bucket: bucket, Prefix: prefix, CachedByTier: map[string]int64{}, TierBytes: map[string]int64{}}
	for name, t := range map[string]store.Tier{"ram": e.opts.RAM, "disk": e.opts.Disk} {
		if s, ok := t.(store.BucketSizer); ok {
			bs.TierBytes[name] = s.BucketBytes(bucket)
		}
	}
	if e.opts.Quotas != nil {
		bs.Quota = max(0, e.opts.Quotas.Quota(bucket))
	}
	c := e.buckets.of(bucket)
	bs.Hits, bs.Misses = c.hits.Load(), c.misses.Load()
	if n := bs.Hits + bs.Misses; n > 0 {
		bs.HitRate = float64(bs.Hits) / float64(n)
	}
	if e.opts.Catalog == nil {
		return bs, nil
	}
	cov, err := e.opts.Catalog.Coverage(bucket)
	if err != nil {
		return bs, err
	}
	for _, cv := range cov {
		bs.Covered = append(bs.Covered, CoveredPrefix{Prefix: cv.Prefix, At: cv.At})
	}
	if e.opts.Pins != nil {
		for _, p := range e.opts.Pins.List() {
			if p.Bucket == bucket {
				bs.Pinned = append(bs.Pinned, p.Prefix)
			}
		}
	}
	opts := store.ListOptions{Prefix: prefix, MaxKeys: 1000}
	for ctx.Err() == nil {
		page, err := e.opts.Catalog.List(bucket, opts)
		if err != nil {
			return bs, err
		}
		for _, o := range page.Objects {
			e.addHeld(&bs, bucket, o)
		}
		if !page.IsTruncated {
			break
		}
		opts.After = page.NextAfter
	}
	if bs.Bytes > 0 {
		bs.CachedPercent = 100 * float64(bs.Cached) / float64(bs.Bytes)
	}
	return bs, ctx.Err()
}

// addHeld counts o and what the tiers hold of it.
func (e *Engine) addHeld(bs *BucketStatus, bucket string, o store.ObjectInfo) {
	bs.Objects++
	bs.Bytes += o.Size
	var most int64
	for name, t := range map[string]store.Tier{"ram": e.opts.RAM, "disk": e.opts.Disk} {
		if h, ok := t.(store.Holder); ok {
			n := h.Held(bucket, o.Key, o.ETag)
			bs.CachedByTier[name] += n
			most = max(most, n)
		}
	}
	bs.Cached += most
	if e.opts.Pins != nil && e.opts.Pins.Pinned(bucket, o.Key) {
		bs.PinnedCached += most
	}
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
