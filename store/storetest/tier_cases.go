// The cases of the tier conformance suite (see RunTier).
package storetest

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/granary-dev/granary/store"
)

// tierRoundTrip: chunks of many sizes come back byte for byte, twice.
func tierRoundTrip(t *testing.T, newTier NewTierFunc) {
	tier := newTier(t, 64*tierMiB)
	sizes := []int{0, 1, 4 * tierKiB, 100 * tierKiB, tierMiB - 1, tierMiB, tierMiB + 1, 8 * tierMiB}
	ids := make([]store.ChunkID, len(sizes))
	for i, size := range sizes {
		ids[i] = store.ChunkID{Bucket: "rt", Key: fmt.Sprintf("size-%d", size), ETag: "e1", Index: int64(i)}
		tierMustPut(t, tier, ids[i], TierPayload(ids[i], size))
	}
	for pass := 0; pass < 2; pass++ {
		for i, size := range sizes {
			tierMustGet(t, tier, ids[i], TierPayload(ids[i], size))
		}
	}
	if got := tier.Stats().Chunks; got != int64(len(sizes)) {
		t.Fatalf("Stats().Chunks = %d, want %d", got, len(sizes))
	}
}

// tierGetMissing: absent chunks, including near neighbours of present
// ones, are ErrNotFound.
func tierGetMissing(t *testing.T, newTier NewTierFunc) {
	tier := newTier(t, 4*tierMiB)
	id := store.ChunkID{Bucket: "b", Key: "k", ETag: "e1", Index: 3}
	tierMustMiss(t, tier, id)
	tierMustPut(t, tier, id, TierPayload(id, 100))
	for _, other := range []store.ChunkID{
		{Bucket: "b", Key: "k", ETag: "e1", Index: 2},
		{Bucket: "b", Key: "k", ETag: "e2", Index: 3},
		{Bucket: "b", Key: "kk", ETag: "e1", Index: 3},
		{Bucket: "bb", Key: "k", ETag: "e1", Index: 3},
		{Bucket: "b", Key: "k", ETag: "e", Index: 3},
	} {
		tierMustMiss(t, tier, other)
	}
	tierMustGet(t, tier, id, TierPayload(id, 100))
}

// tierPutTwice: a second Put of a present ID is accepted and changes
// nothing.
func tierPutTwice(t *testing.T, newTier NewTierFunc) {
	tier := newTier(t, 4*tierMiB)
	id := store.ChunkID{Bucket: "b", Key: "k", ETag: "e1", Index: 0}
	data := TierPayload(id, 10*tierKiB)
	tierMustPut(t, tier, id, data)
	tierMustPut(t, tier, id, TierPayload(id, 10*tierKiB))
	tierMustGet(t, tier, id, data)
	if got := tier.Stats().Chunks; got != 1 {
		t.Fatalf("Stats().Chunks = %d after putting one chunk twice, want 1", got)
	}
}

// tierBudget: UsedBytes never exceeds the capacity while four times the
// capacity is written, every Put succeeds (eviction frees room), the chunk
// just put can be read back, and what survives is intact.
func tierBudget(t *testing.T, newTier NewTierFunc) {
	const capacity = 2 * tierMiB
	tier := newTier(t, capacity)
	r := rand.New(rand.NewPCG(1, 2))
	var ids []store.ChunkID
	var sizes []int
	for total := 0; total < 4*capacity; {
		size := r.IntN(64 * tierKiB)
		if len(ids)%10 == 9 {
			size = 300 * tierKiB
		}
		id := store.ChunkID{Bucket: "budget", Key: fmt.Sprintf("obj-%d", len(ids)), ETag: "e1"}
		data := TierPayload(id, size)
		tierMustPut(t, tier, id, data)
		tierCheckBudget(t, tier, capacity)
		tierMustGet(t, tier, id, data)
		ids, sizes = append(ids, id), append(sizes, size)
		total += size
	}
	present := 0
	for i, id := range ids {
		got, err := tier.Get(id)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			t.Fatalf("Get(%v): %v", tierName(id), err)
		case !slices.Equal(got, TierPayload(id, sizes[i])):
			t.Fatalf("Get(%v): wrong bytes after evictions", tierName(id))
		default:
			present++
		}
	}
	s := tier.Stats()
	if present == 0 || present == len(ids) {
		t.Fatalf("%d of %d chunks present after writing 4x the capacity", present, len(ids))
	}
	if s.Evictions == 0 || s.Chunks != int64(present) {
		t.Fatalf("Stats = %+v; want Evictions > 0 and Chunks = %d", s, present)
	}
	tierCheckBudget(t, tier, capacity)
}

// tierTooLarge: a chunk larger than the whole budget is refused with
// ErrTooLarge and leaves no trace; a chunk of half the budget fits.
func tierTooLarge(t *testing.T, newTier NewTierFunc) {
	const capacity = tierMiB
	tier := newTier(t, capacity)
	big := store.ChunkID{Bucket: "b", Key: "big", ETag: "e1"}
	if err := tier.Put(big, TierPayload(big, capacity+1)); !errors.Is(err, store.ErrTooLarge) {
		t.Fatalf("Put(capacity+1 bytes) = %v, want ErrTooLarge", err)
	}
	tierMustMiss(t, tier, big)
	tierCheckBudget(t, tier, capacity)
	half := store.ChunkID{Bucket: "b", Key: "half", ETag: "e1"}
	tierMustPut(t, tier, half, TierPayload(half, capacity/2))
	tierMustGet(t, tier, half, TierPayload(half, capacity/2))
}

// tierCollidingIDs are IDs whose naive concatenations collide or prefix
// each other; a tier must keep them apart.
var tierCollidingIDs = []store.ChunkID{
	{Bucket: "b", Key: "a", ETag: "e1", Index: 0},
	{Bucket: "b", Key: "a", ETag: "e1", Index: 1},
	{Bucket: "b", Key: "a", ETag: "e2", Index: 0},
	{Bucket: "b", Key: "ab", ETag: "e1", Index: 0},
	{Bucket: "b", Key: "a/", ETag: "e1", Index: 0},
	{Bucket: "b", Key: "a\x00b", ETag: "e1", Index: 0},
	{Bucket: "b", Key: "x/y", ETag: "e1", Index: 0},
	{Bucket: "b/x", Key: "y", ETag: "e1", Index: 0},
	{Bucket: "bb", Key: "a", ETag: "e1", Index: 0},
	{Bucket: "b", Key: "é", ETag: "e1", Index: 7},
}

// tierDeleteObject: DeleteObject drops every version and index of exactly
// one key.
func tierDeleteObject(t *testing.T, newTier NewTierFunc) {
	tier := newTier(t, 16*tierMiB)
	for _, id := range tierCollidingIDs {
		tierMustPut(t, tier, id, TierPayload(id, 4*tierKiB))
	}
	deleted := map[[2]string]bool{}
	check := func() {
		t.Helper()
		for _, id := range tierCollidingIDs {
			if deleted[[2]string{id.Bucket, id.Key}] {
				tierMustMiss(t, tier, id)
			} else {
				tierMustGet(t, tier, id, TierPayload(id, 4*tierKiB))
			}
		}
	}
	for _, obj := range [][2]string{{"b", "a"}, {"b", "x/y"}, {"b", "missing"}, {"nobucket", "a"}, {"b", "é"}} {
		if err := tier.DeleteObject(obj[0], obj[1]); err != nil {
			t.Fatalf("DeleteObject(%q, %q): %v", obj[0], obj[1], err)
		}
		deleted[obj] = true
		check()
	}
	if got, want := tier.Stats().Chunks, int64(len(tierCollidingIDs)-5); got != want {
		t.Fatalf("Stats().Chunks = %d after deletes, want %d", got, want)
	}
}

// tierVersions: a VersionLister reports exactly the ETags held for a key.
func tierVersions(t *testing.T, newTier NewTierFunc) {
	tier := newTier(t, 16*tierMiB)
	vl, ok := tier.(store.VersionLister)
	if !ok {
		t.Skip("tier does not implement store.VersionLister")
	}
	if vs := vl.Versions("b", "a"); len(vs) != 0 {
		t.Fatalf("Versions of an empty tier = %q", vs)
	}
	for _, id := range tierCollidingIDs {
		tierMustPut(t, tier, id, TierPayload(id, 100))
	}
	want := map[[2]string][]string{
		{"b", "a"}: {"e1", "e2"}, {"b", "ab"}: {"e1"}, {"b", "x/y"}: {"e1"},
		{"b/x", "y"}: {"e1"}, {"b", "x"}: nil, {"b", "missing"}: nil,
	}
	for obj, w := range want {
		if got := tierVersionsOf(vl, obj[0], obj[1]); !slices.Equal(got, w) {
			t.Fatalf("Versions(%q, %q) = %q, want %q", obj[0], obj[1], got, w)
		}
	}
	if err := tier.DeleteObject("b", "a"); err != nil {
		t.Fatal(err)
	}
	if got := vl.Versions("b", "a"); len(got) != 0 {
		t.Fatalf("Versions after DeleteObject = %q", got)
	}
	if got := tierVersionsOf(vl, "b", "ab"); !slices.Equal(got, []string{"e1"}) {
		t.Fatalf("Versions(b, ab) after deleting b/a = %q", got)
	}
}

// tierHeld: a Holder reports the bytes of exactly one version of a key.
func tierHeld(t *testing.T, newTier NewTierFunc) {
	tier := newTier(t, 16*tierMiB)
	h, ok := tier.(store.Holder)
	if !ok {
		t.Skip("tier does not implement store.Holder")
	}
	for i, id := range tierCollidingIDs {
		tierMustPut(t, tier, id, TierPayload(id, 100+i))
	}
	want := map[[3]string]int64{
		{"b", "a", "e1"}: 100 + 101, {"b", "a", "e2"}: 102, {"b", "ab", "e1"}: 103,
		{"b", "a", "e"}: 0, {"b", "x", "e1"}: 0, {"b/x", "y", "e1"}: 107,
	}
	for v, n := range want {
		if got := h.Held(v[0], v[1], v[2]); got != n {
			t.Fatalf("Held(%q, %q, %q) = %d, want %d", v[0], v[1], v[2], got, n)
		}
	}
	if err := tier.DeleteObject("b", "a"); err != nil {
		t.Fatal(err)
	}
	if got := h.Held("b", "a", "e1"); got != 0 {
		t.Fatalf("Held after DeleteObject = %d", got)
	}
}

// tierStats: counters follow puts and deletes.
func tierStats(t *testing.T, newTier NewTierFunc) {
	const capacity = 16 * tierMiB
	tier := newTier(t, capacity)
	s := tier.Stats()
	if s != (store.TierStats{CapacityBytes: capacity}) {
		t.Fatalf("Stats of an empty tier = %+v", s)
	}
	sizes := []int{tierKiB, 10 * tierKiB, 100 * tierKiB}
	for i, size := range sizes {
		id := store.ChunkID{Bucket: "st", Key: fmt.Sprintf("k%d", i), ETag: "e1"}
		tierMustPut(t, tier, id, TierPayload(id, size))
	}
	s = tier.Stats()
	if s.Chunks != 3 || s.UsedBytes < 111*tierKiB || s.UsedBytes > capacity || s.Evictions != 0 {
		t.Fatalf("Stats after 3 puts (111 KiB) = %+v", s)
	}
	if err := tier.DeleteObject("st", "k2"); err != nil {
		t.Fatal(err)
	}
	s2 := tier.Stats()
	if s2.Chunks != 2 || s2.UsedBytes > s.UsedBytes || s2.CapacityBytes != capacity {
		t.Fatalf("Stats after a delete = %+v (before: %+v)", s2, s)
	}
}

// tierConcurrentSize is the size of a chunk in the concurrent case, derived
// from its ID so every goroutine knows what a Get must return: mostly
// small chunks, one in eight between 150 and 200 KiB (so a tier that
// stores large chunks apart exercises both paths).
func tierConcurrentSize(id store.ChunkID) int {
	h := fnv.New32a()
	h.Write([]byte(tierName(id)))
	v := h.Sum32()
	if v%8 == 0 {
		return 150*tierKiB + int(v>>3)%(50*tierKiB)
	}
	return int(v>>3) % (48 * tierKiB)
}

// tierConcurrent: many goroutines Put, Get and DeleteObject overlapping
// keys in a small tier (so eviction runs too); every hit returns the right
// bytes and the budget holds throughout. Meant to run under -race.
func tierConcurrent(t *testing.T, newTier NewTierFunc) {
	const capacity = tierMiB
	tier := newTier(t, capacity)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() { tierWorker(t, tier, capacity, uint64(g)) })
	}
	wg.Wait()
	tierCheckBudget(t, tier, capacity)
}

// tierWorker is one goroutine of tierConcurrent. It reports with t.Errorf
// (safe from any goroutine) and stops at its first failure.
func tierWorker(t *testing.T, tier store.Tier, capacity int64, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 7))
	for range 300 {
		id := store.ChunkID{
			Bucket: "conc", Key: fmt.Sprintf("k%d", r.IntN(12)),
			ETag: fmt.Sprintf("e%d", r.IntN(2)), Index: int64(r.IntN(4)),
		}
		want := TierPayload(id, tierConcurrentSize(id))
		switch op := r.IntN(10); {
		case op < 5:
			got, err := tier.Get(id)
			if err == nil && !slices.Equal(got, want) {
				t.Errorf("Get(%v): wrong bytes", tierName(id))
				return
			}
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				t.Errorf("Get(%v): %v", tierName(id), err)
				return
			}
		case op < 9:
			if err := tier.Put(id, want); err != nil {
				t.Errorf("Put(%v): %v", tierName(id), err)
				return
			}
		default:
			if err := tier.DeleteObject(id.Bucket, id.Key); err != nil {
				t.Errorf("DeleteObject(%q): %v", id.Key, err)
				return
			}
		}
		if s := tier.Stats(); s.UsedBytes > capacity {
			t.Errorf("UsedBytes = %d > capacity %d", s.UsedBytes, capacity)
			return
		}
	}
}

// tierClosed: after Close, operations fail with an error instead of
// panicking, and a second Close is harmless.
func tierClosed(t *testing.T, newTier NewTierFunc) {
	tier := newTier(t, 4*tierMiB)
	id := store.ChunkID{Bucket: "b", Key: "k", ETag: "e1"}
	tierMustPut(t, tier, id, TierPayload(id, 100))
	if err := tier.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got, err := tier.Get(id); err == nil {
		t.Fatalf("Get after Close = %d bytes, nil error", len(got))
	}
	if err := tier.Put(id, TierPayload(id, 100)); err == nil {
		t.Fatal("Put after Close: nil error")
	}
	_ = tier.DeleteObject("b", "k") // must not panic; an error is fine
	_ = tier.Stats()
	if vl, ok := tier.(store.VersionLister); ok {
		_ = vl.Versions("b", "k")
	}
	_ = tier.Close() // must not panic
}
