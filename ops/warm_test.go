// Warm-ups over MinIO: data and listings served with the origin down,
// incremental re-warms, metadata-only warms and LIST from the catalog
// kept current by writes, and a prefix larger than the cache.
package ops

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/pins"
)

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
	r := newRig(t, rigOptions{metaMax: 10})
	sw := r.origin
	objs := seedSet(r, 40)
	wantKeys, _ := r.listAll("ds/", "", 0)
	_, wantDirs := r.listAll("ds/", "/", 0)
	st := r.warm(WarmSpec{Prefix: "ds/", Parallel: 4})
	if st.State != WarmDone || st.Listed != 40 || st.Fetched != 40 || st.Failed != 0 || st.Removed != 0 {
		t.Fatalf("warm-up: %+v", st)
	}
	sw.down.Store(true)
	for key, want := range objs {
		if got := r.read(key); !bytes.Equal(got, want) {
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
	r := newRig(t, rigOptions{})
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
	gets := r.origin.gets.Load()
	st := r.warm(WarmSpec{Prefix: "ds/"})
	if st.State != WarmDone || st.Listed != 30 || st.Changed != 1 || st.Removed != 1 || st.Fetched != 2 || st.Cached != 28 {
		t.Fatalf("second warm-up: %+v", st)
	}
	if n := r.origin.gets.Load() - gets; n != 2 {
		t.Fatalf("second warm-up read %d objects from the origin, want the 2 new versions", n)
	}
	if got := r.read(changed); !bytes.Equal(got, objs[changed]) {
		t.Fatalf("changed object: %q", got)
	}
	keys, _ := r.listAll("ds/", "", 0)
	if len(keys) != 30 {
		t.Fatalf("listing after the second warm-up: %d keys, want 30", len(keys))
	}
}

func TestWarmMetadataOnlyAndWrites(t *testing.T) {
	r := newRig(t, rigOptions{})
	sw := r.origin
	seedSet(r, 12)
	gets := r.origin.gets.Load()
	st := r.warm(WarmSpec{Prefix: "ds/", MetadataOnly: true})
	if st.State != WarmDone || st.Listed != 12 || st.Fetched != 0 || r.origin.gets.Load() != gets {
		t.Fatalf("metadata-only warm-up: %+v, %d origin reads", st, r.origin.gets.Load()-gets)
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
	r := newRig(t, rigOptions{capacity: 2 << 20})
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
// it and evicts what is not pinned.
func TestPinnedPrefixSurvivesPressure(t *testing.T) {
	set, err := pins.Open(nil, "")
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, rigOptions{capacity: 4 << 20, pins: set})
	sw := r.origin
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
	// 12 MiB of other objects through a 4 MiB cache, each read more often
	// than the one before it (3 to 14 times), so that the later ones win
	// their admission against what is cached and the tiers evict (tinylfu
	// keeps what is cached unless a newcomer beats it by a whole access).
	for i := range 48 {
		k := fmt.Sprintf("churn/%d", i)
		r.seed(k, randBytes(t, 256<<10))
		for range 3 + i/4 {
			r.read(k)
		}
	}
	if n := r.ram.Stats().Evictions + r.disk.Stats().Evictions; n == 0 {
		t.Fatal("no eviction: the test put the cache under no pressure")
	}
	sw.down.Store(true)
	for k, want := range pinned {
		if got := r.read(k); !bytes.Equal(got, want) {
			t.Fatalf("pinned %s after the pressure, origin down: %d bytes", k, len(got))
		}
	}
}
