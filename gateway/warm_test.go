// Warm-ups over MinIO: data and listings served with the origin down,
// incremental re-warms, metadata-only warms and LIST from the catalog
// kept current by writes, and a prefix larger than the cache.
package gateway

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/pins"
)

// switchOrigin fails every read and listing, as an unreachable origin
// would, while down is set.
type switchOrigin struct {
	store.Origin
	down atomic.Bool
}

func (s *switchOrigin) Stat(ctx context.Context, b, k string) (store.ObjectInfo, error) {
	if s.down.Load() {
		return store.ObjectInfo{}, store.ErrUnavailable
	}
	return s.Origin.Stat(ctx, b, k)
}

func (s *switchOrigin) Get(ctx context.Context, b, k string, r store.ReadRange) (io.ReadCloser, store.ObjectInfo, error) {
	if s.down.Load() {
		return nil, store.ObjectInfo{}, store.ErrUnavailable
	}
	return s.Origin.Get(ctx, b, k, r)
}

func (s *switchOrigin) List(ctx context.Context, b string, o store.ListOptions) (store.ListPage, error) {
	if s.down.Load() {
		return store.ListPage{}, store.ErrUnavailable
	}
	return s.Origin.List(ctx, b, o)
}

// warmRig is a rig with a catalog over a switchable origin.
func warmRig(t *testing.T, capacity int64) (*rig, *switchOrigin) {
	return warmRigMeta(t, capacity, 0)
}

// warmRigMeta is warmRig with a metadata cache of metaMax entries.
func warmRigMeta(t *testing.T, capacity int64, metaMax int) (*rig, *switchOrigin) {
	sw := &switchOrigin{}
	r := newRig(t, rigOptions{chunk: 64 << 10, catalog: true, capacity: capacity, metaMax: metaMax,
		wrap: func(o store.Origin) store.Origin { sw.Origin = o; return sw }})
	return r, sw
}

// warm runs a warm-up to its end (bounded) and returns its status.
func (r *rig) warm(spec WarmSpec) WarmStatus {
	r.t.Helper()
	spec.Bucket = r.bucket
	id, err := r.e.StartWarm(context.Background(), spec)
	if err != nil {
		r.t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		st, ok := r.e.WarmStatus(id)
		if !ok {
			r.t.Fatalf("job %s vanished", id)
		}
		if st.State != WarmRunning {
			return st
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("warm-up still running after 60s: %+v", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// listAll pages through a listing with the engine.
func (r *rig) listAll(prefix, delim string, maxKeys int) (keys []string, prefixes []string) {
	r.t.Helper()
	opts := store.ListOptions{Prefix: prefix, Delimiter: delim, MaxKeys: maxKeys}
	for {
		page, err := r.e.List(context.Background(), r.bucket, opts)
		if err != nil {
			r.t.Fatalf("list %q: %v", prefix, err)
		}
		for _, o := range page.Objects {
			keys = append(keys, fmt.Sprintf("%s/%d/%s", o.Key, o.Size, o.ETag))
		}
		prefixes = append(prefixes, page.CommonPrefixes...)
		if !page.IsTruncated {
			return keys, prefixes
		}
		opts.After = page.NextAfter
	}
}

func seedSet(r *rig, n int) map[string][]byte {
	objs := map[string][]byte{}
	for i := range n {
		key := fmt.Sprintf("ds/part%d/%03d", i%3, i)
		objs[key] = randBytes(r.t, 1+(i*7919)%(200<<10)) // up to 4 chunks of 64 KiB
		r.seed(key, objs[key])
	}
	r.seed("other/x", []byte("not warmed"))
	return objs
}

func TestWarmServesWithOriginDown(t *testing.T) {
	// A metadata cache smaller than the prefix: the objects it lost are
	// served with the catalog's metadata.
	r, sw := warmRigMeta(t, 0, 10)
	objs := seedSet(r, 40)
	wantKeys, _ := r.listAll("ds/", "", 0)
	_, wantDirs := r.listAll("ds/", "/", 0)
	st := r.warm(WarmSpec{Prefix: "ds/", Parallel: 4})
	if st.State != WarmDone || st.Listed != 40 || st.Fetched != 40 || st.Failed != 0 || st.Removed != 0 {
		t.Fatalf("warm-up: %+v", st)
	}
	sw.down.Store(true)
	for key, want := range objs {
		if got := r.read(key, nil); !bytes.Equal(got, want) {
			t.Fatalf("%s with the origin down: %d bytes, want %d", key, len(got), len(want))
		}
	}
	for _, max := range []int{1, 7, 1000} {
		keys, _ := r.listAll("ds/", "", max)
		_, dirs := r.listAll("ds/", "/", max)
		if !reflect.DeepEqual(keys, wantKeys) || !reflect.DeepEqual(dirs, wantDirs) {
			t.Fatalf("listing with the origin down, %d per page: %d keys, dirs %v; want %d keys, %v", max, len(keys), dirs, len(wantKeys), wantDirs)
		}
	}
	if _, err := r.e.List(context.Background(), r.bucket, store.ListOptions{Prefix: "other/"}); err == nil {
		t.Fatal("a listing outside the warmed prefix was answered with the origin down")
	}
}

func TestWarmIncremental(t *testing.T) {
	r, _ := warmRig(t, 0)
	objs := seedSet(r, 30)
	if st := r.warm(WarmSpec{Prefix: "ds/"}); st.State != WarmDone || st.Fetched != 30 {
		t.Fatalf("first warm-up: %+v", st)
	}
	changed, gone, added := "ds/part0/000", "ds/part1/001", "ds/part2/new"
	objs[changed] = []byte("changed at the origin")
	r.seed(changed, objs[changed])
	if err := r.origin.Delete(context.Background(), r.bucket, gone); err != nil {
		t.Fatal(err)
	}
	delete(objs, gone)
	objs[added] = []byte("added at the origin")
	r.seed(added, objs[added])
	gets := r.originGets()
	st := r.warm(WarmSpec{Prefix: "ds/"})
	if st.State != WarmDone || st.Listed != 30 || st.Changed != 1 || st.Removed != 1 || st.Fetched != 2 || st.Cached != 28 {
		t.Fatalf("second warm-up: %+v", st)
	}
	if n := r.originGets() - gets; n != 2 {
		t.Fatalf("second warm-up read %d objects from the origin, want the 2 new versions", n)
	}
	if got := r.read(changed, nil); !bytes.Equal(got, objs[changed]) {
		t.Fatalf("changed object: %q", got)
	}
	keys, _ := r.listAll("ds/", "", 0)
	if len(keys) != 30 {
		t.Fatalf("listing after the second warm-up: %d keys, want 30", len(keys))
	}
}

func TestWarmMetadataOnlyAndWrites(t *testing.T) {
	r, sw := warmRig(t, 0)
	seedSet(r, 12)
	gets := r.originGets()
	st := r.warm(WarmSpec{Prefix: "ds/", MetadataOnly: true})
	if st.State != WarmDone || st.Listed != 12 || st.Fetched != 0 || r.originGets() != gets {
		t.Fatalf("metadata-only warm-up: %+v, %d origin reads", st, r.originGets()-gets)
	}
	// Writes through the node show in the catalog's answers.
	if _, err := r.e.Put(context.Background(), r.bucket, "ds/part0/put", bytes.NewReader([]byte("new")), 3, store.ObjectMeta{}); err != nil {
		t.Fatal(err)
	}
	if err := r.e.Delete(context.Background(), r.bucket, "ds/part1/001"); err != nil {
		t.Fatal(err)
	}
	sw.down.Store(true)
	keys, dirs := r.listAll("ds/part0/", "/", 0)
	if len(keys) != 5 || len(dirs) != 0 || keys[len(keys)-1][:len("ds/part0/put/3/")] != "ds/part0/put/3/" {
		t.Fatalf("part0 after a put, origin down: %v %v", keys, dirs)
	}
	if keys, _ := r.listAll("ds/part1/", "", 0); len(keys) != 3 {
		t.Fatalf("part1 after a delete, origin down: %v", keys)
	}
}

func TestWarmTooBig(t *testing.T) {
	r, _ := warmRig(t, 2<<20)
	for i := range 8 {
		r.seed(fmt.Sprintf("big/%d", i), randBytes(t, 512<<10))
	}
	st := r.warm(WarmSpec{Prefix: "big/", Parallel: 2})
	if st.State != WarmFailed || st.Listed != 8 || st.Fetched > 4 || st.Fetched == 0 {
		t.Fatalf("warm-up of 4 MiB into 2 MiB: %+v", st)
	}
	if _, ok := r.cat.Covered(r.bucket, "big/"); !ok {
		t.Fatal("the listing was not loaded")
	}
	t.Logf("error: %s", st.Error)
}

// TestPinnedPrefixSurvivesPressure: a warmed, pinned prefix stays cached
// while far more than the cache's worth of other data is read through
// it, under the default policy and LRU alike.
func TestPinnedPrefixSurvivesPressure(t *testing.T) {
	set, err := pins.Open(nil, "")
	if err != nil {
		t.Fatal(err)
	}
	sw := &switchOrigin{}
	r := newRig(t, rigOptions{chunk: 64 << 10, catalog: true, capacity: 4 << 20, pins: set,
		wrap: func(o store.Origin) store.Origin { sw.Origin = o; return sw }})
	pinned := map[string][]byte{}
	for i := range 8 {
		k := fmt.Sprintf("keep/%d", i)
		pinned[k] = randBytes(t, 128<<10)
		r.seed(k, pinned[k])
	}
	if err := set.Add(r.bucket, "keep/"); err != nil {
		t.Fatal(err)
	}
	if st := r.warm(WarmSpec{Prefix: "keep/"}); st.State != WarmDone || st.Fetched != 8 {
		t.Fatalf("warm-up of the pinned prefix: %+v", st)
	}
	// 12 MiB of other objects, each read three times, through a 4 MiB cache.
	for i := range 48 {
		k := fmt.Sprintf("churn/%d", i)
		r.seed(k, randBytes(t, 256<<10))
		for range 3 {
			r.read(k, nil)
		}
	}
	if n := r.ram.Stats().Evictions + r.disk.Stats().Evictions; n == 0 {
		t.Fatal("no eviction: the test put the cache under no pressure")
	}
	sw.down.Store(true)
	for k, want := range pinned {
		if got := r.read(k, nil); !bytes.Equal(got, want) {
			t.Fatalf("pinned %s after the pressure, origin down: %d bytes", k, len(got))
		}
	}
}

// quotaSet gives every bucket the same quota.
type quotaSet int64

func (q quotaSet) Quota(string) int64 { return int64(q) }

// TestQuotaCapsBucket: a bucket never holds more than its quota in a
// tier, its reads past it still succeed (from the origin), and status
// reports its bytes per tier and the quota.
func TestQuotaCapsBucket(t *testing.T) {
	const quota = 1 << 20
	r := newRig(t, rigOptions{chunk: 64 << 10, catalog: true, quotas: quotaSet(quota)})
	objs := map[string][]byte{}
	for i := range 12 {
		k := fmt.Sprintf("q/%d", i)
		objs[k] = randBytes(t, 256<<10)
		r.seed(k, objs[k])
	}
	for k, want := range objs {
		if got := r.read(k, nil); !bytes.Equal(got, want) {
			t.Fatalf("%s: %d bytes", k, len(got))
		}
	}
	r.e.Close() // the disk queue written out
	st, err := r.e.Status(context.Background(), r.bucket, "")
	if err != nil {
		t.Fatal(err)
	}
	b := st.Buckets[0]
	if b.Quota != quota || b.TierBytes["ram"] == 0 || b.TierBytes["ram"] > quota || b.TierBytes["disk"] == 0 || b.TierBytes["disk"] > quota {
		t.Fatalf("a bucket with a 1 MiB quota after reading 3 MiB: %+v", b)
	}
}

// TestDeclinedChunkFetchedOnce: a cold read whose chunk the full tiers
// decline (they hold more popular chunks) still costs one origin read:
// the reader takes the bytes of the metadata load's flight.
func TestDeclinedChunkFetchedOnce(t *testing.T) {
	r := newRig(t, rigOptions{chunk: 64 << 10, capacity: 2 << 20})
	for i := range 40 { // more than the tiers hold, each read three times
		k := fmt.Sprintf("hot/%d", i)
		r.seed(k, randBytes(t, 60<<10))
		for range 3 {
			r.read(k, nil)
		}
	}
	cold := map[string][]byte{}
	for i := range 20 {
		k := fmt.Sprintf("cold/%d", i)
		cold[k] = randBytes(t, 60<<10)
		r.seed(k, cold[k])
	}
	gets := r.originGets()
	for k, want := range cold {
		if got := r.read(k, nil); !bytes.Equal(got, want) {
			t.Fatalf("%s: %d bytes", k, len(got))
		}
	}
	if n := r.originGets() - gets; n != len(cold) {
		t.Fatalf("%d origin reads for %d cold objects", n, len(cold))
	}
	if r.ram.Stats().Declined == 0 {
		t.Fatal("the RAM tier declined nothing: the test exercised no decline")
	}
}
