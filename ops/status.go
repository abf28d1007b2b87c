// The status of a node for operators and schedulers: its tiers, and per
// bucket what the catalog knows (objects, bytes), how much of it is
// cached and in which tier, the hit rate, and the warm-up jobs.
package ops

import (
	"context"
	"slices"
	"time"

	"github.com/granary-dev/granary/gateway"
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
	// Hits and Misses count the chunk lookups of client reads of the
	// bucket since start (not a warm-up's: gateway.Engine.Lookups).
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
	// Access names the node's users and policies (access.Registry.Digest);
	// cluster members must show the same. Set by the api.
	Access string `json:"access,omitempty"`
	// Object is what the node holds of one object, when asked.
	Object *ObjectHeld `json:"object,omitempty"`
	// Origin is the origin's health: up or down, since when, the last
	// error and its cause, the breaker, timeouts (nil if unknown).
	Origin *store.OriginHealth `json:"origin,omitempty"`
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
func (o *Ops) HeldObject(ctx context.Context, bucket, key string) (ObjectHeld, error) {
	info, err := o.e.Head(ctx, bucket, key)
	if err != nil {
		return ObjectHeld{}, err
	}
	oh := ObjectHeld{Bucket: bucket, Key: key, ETag: info.ETag, Size: info.Size}
	oh.Held, oh.ByTier = o.Held(bucket, key, info.ETag)
	return oh, nil
}

// Held reports what the tiers hold of one object version, per tier, and
// the most of any tier (what the node can serve without asking).
func (o *Ops) Held(bucket, key, etag string) (most int64, byTier map[string]int64) {
	byTier = map[string]int64{}
	for _, t := range o.e.Tiers() {
		if h, ok := t.Tier.(store.Holder); ok {
			n := h.Held(bucket, key, etag)
			byTier[t.Name] = n
			most = max(most, n)
		}
	}
	return most, byTier
}

// Status reports the node; with a bucket, that bucket (under prefix)
// only, else every bucket the catalog covers or that had lookups. The
// cached figures walk the catalog's entries: a second or so per million
// objects.
func (o *Ops) Status(ctx context.Context, bucket, prefix string) (Status, error) {
	st := Status{Started: o.e.Started(), Warm: o.WarmJobs()}
	if h, ok := o.e.OriginHealth(); ok {
		st.Origin = &h
	}
	for _, t := range o.e.Tiers() {
		st.Tiers = append(st.Tiers, TierStatus{Name: t.Name, TierStats: t.Stats()})
	}
	names, err := o.statusBuckets(bucket)
	if err != nil {
		return st, err
	}
	for _, b := range names {
		bs, err := o.bucketStatus(ctx, b, prefix)
		if err != nil {
			return st, err
		}
		st.Buckets = append(st.Buckets, bs)
	}
	return st, nil
}

// statusBuckets lists the buckets a status reports.
func (o *Ops) statusBuckets(bucket string) ([]string, error) {
	if bucket != "" {
		return []string{bucket}, nil
	}
	names := o.e.LookedUp()
	if cat := o.e.Catalog(); cat != nil {
		cov, err := cat.Coverage("")
		if err != nil {
			return nil, err
		}
		for _, c := range cov {
			names = append(names, c.Bucket)
		}
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// bucketStatus walks the catalog under bucket/prefix and asks the tiers
// how much of each object version they hold.
func (o *Ops) bucketStatus(ctx context.Context, bucket, prefix string) (BucketStatus, error) {
	bs := BucketStatus{Bucket: bucket, Prefix: prefix, CachedByTier: map[string]int64{}, TierBytes: map[string]int64{},
		Quota: o.e.Quota(bucket)}
	for _, t := range dataTiers(o.e.Tiers()) {
		if s, ok := t.Tier.(store.BucketSizer); ok {
			bs.TierBytes[t.Name] = s.BucketBytes(bucket)
		}
	}
	bs.Hits, bs.Misses = o.e.Lookups(bucket)
	if n := bs.Hits + bs.Misses; n > 0 {
		bs.HitRate = float64(bs.Hits) / float64(n)
	}
	cat := o.e.Catalog()
	if cat == nil {
		return bs, nil
	}
	cov, err := cat.Coverage(bucket)
	if err != nil {
		return bs, err
	}
	for _, cv := range cov {
		bs.Covered = append(bs.Covered, CoveredPrefix{Prefix: cv.Prefix, At: cv.At})
	}
	pinned := o.pinned(bucket, &bs)
	opts := store.ListOptions{Prefix: prefix, MaxKeys: 1000}
	for ctx.Err() == nil {
		page, err := cat.List(bucket, opts)
		if err != nil {
			return bs, err
		}
		for _, obj := range page.Objects {
			o.addHeld(&bs, obj, pinned)
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

// pinned fills bs.Pinned and returns whether a key of bucket is pinned.
func (o *Ops) pinned(bucket string, bs *BucketStatus) func(key string) bool {
	set, err := o.e.Pins()
	if err != nil {
		return func(string) bool { return false }
	}
	for _, p := range set.List() {
		if p.Bucket == bucket {
			bs.Pinned = append(bs.Pinned, p.Prefix)
		}
	}
	return func(key string) bool { return set.Pinned(bucket, key) }
}

// addHeld counts obj and what the tiers hold of it.
func (o *Ops) addHeld(bs *BucketStatus, obj store.ObjectInfo, pinned func(string) bool) {
	bs.Objects++
	bs.Bytes += obj.Size
	var most int64
	for _, t := range dataTiers(o.e.Tiers()) {
		if h, ok := t.Tier.(store.Holder); ok {
			n := h.Held(bs.Bucket, obj.Key, obj.ETag)
			bs.CachedByTier[t.Name] += n
			most = max(most, n)
		}
	}
	bs.Cached += most
	if pinned(obj.Key) {
		bs.PinnedCached += most
	}
}

// dataTiers drops the hot tiers: they hold copies of chunks other nodes
// own, so a bucket's figures would count what this node does not keep.
func dataTiers(ts []gateway.NamedTier) []gateway.NamedTier {
	return slices.DeleteFunc(ts, gateway.NamedTier.Copies)
}
