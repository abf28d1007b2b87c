// Tests and benchmarks of the RAM tier: the conformance suite under both
// policies, LRU order across shards, budget accounting, and warm-path speed.
package ram

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/storetest"
)

// charge is what a chunk of data on the heap costs against the budget.
func charge(id store.ChunkID, data []byte) int64 { return heapCost(id, len(data)) }

func newTestTier(t *testing.T, capacity int64) store.Tier {
	tier := New(Options{Capacity: capacity, Policy: PolicyLRU})
	t.Cleanup(func() { _ = tier.Close() })
	return tier
}

// putAlwaysTier is a TinyLFU tier whose Put never declines, for the
// conformance suite, which expects every Put into a full tier to evict.
// Put's declining path is tested in admission_test.go.
type putAlwaysTier struct{ *Tier }

func (p putAlwaysTier) Put(id store.ChunkID, data []byte) error { return p.PutAlways(id, data) }

func TestConformance(t *testing.T) {
	t.Run("LRU", func(t *testing.T) { storetest.RunTier(t, newTestTier) })
	t.Run("TinyLFU", func(t *testing.T) {
		storetest.RunTier(t, func(t *testing.T, capacity int64) store.Tier {
			tier := New(Options{Capacity: capacity})
			t.Cleanup(func() { _ = tier.Close() })
			return putAlwaysTier{tier}
		})
	})
}

// TestLRUOrder: the least recently used chunk goes first, across shards;
// under TinyLFU, PutAlways evicts in the same order.
func TestLRUOrder(t *testing.T) {
	for _, policy := range []string{PolicyLRU, PolicyTinyLFU} {
		t.Run(policy, func(t *testing.T) { testLRUOrder(t, policy) })
	}
}

func testLRUOrder(t *testing.T, policy string) {
	const size = 1000
	ids := make([]store.ChunkID, 5)
	for i := range ids {
		ids[i] = store.ChunkID{Bucket: "b", Key: fmt.Sprintf("key-%d", i), ETag: "e"}
	}
	per := charge(ids[0], make([]byte, size))
	tier := New(Options{Capacity: 3 * per, Policy: policy})
	defer tier.Close()
	putFn := tier.Put
	if policy == PolicyTinyLFU {
		putFn = tier.PutAlways
	}
	put := func(i int) {
		t.Helper()
		if err := putFn(ids[i], make([]byte, size)); err != nil {
			t.Fatal(err)
		}
	}
	put(0)
	put(1)
	put(2)
	if _, err := tier.Get(ids[0]); err != nil { // 0 becomes the most recent
		t.Fatal(err)
	}
	put(3) // evicts 1
	put(4) // evicts 2
	for i, want := range []bool{true, false, false, true, true} {
		_, err := tier.Get(ids[i])
		if got := err == nil; got != want {
			t.Errorf("chunk %d present = %v, want %v (err %v)", i, got, want, err)
		}
	}
	if s := tier.Stats(); s.Evictions != 2 || s.UsedBytes != 3*per || s.Chunks != 3 {
		t.Fatalf("Stats = %+v", s)
	}
}

// TestChargeIncludesOverhead: an empty chunk still costs its entry.
func TestChargeIncludesOverhead(t *testing.T) {
	tier := New(Options{Capacity: 1 << 20})
	defer tier.Close()
	id := store.ChunkID{Bucket: "bucket", Key: "key", ETag: "etag", Index: 1}
	if err := tier.Put(id, nil); err != nil {
		t.Fatal(err)
	}
	if got, want := tier.Stats().UsedBytes, int64(EntryOverhead+len("bucketkeyetag")); got != want {
		t.Fatalf("UsedBytes = %d, want %d", got, want)
	}
	got, err := tier.Get(id)
	if err != nil || got == nil || len(got) != 0 {
		t.Fatalf("Get of an empty chunk = %v, %v; want a non-nil empty slice", got, err)
	}
}

// TestZeroCapacity: a tier without budget refuses everything cleanly.
func TestZeroCapacity(t *testing.T) {
	tier := New(Options{})
	defer tier.Close()
	id := store.ChunkID{Bucket: "b", Key: "k"}
	if err := tier.Put(id, []byte("x")); !errors.Is(err, store.ErrTooLarge) {
		t.Fatalf("Put = %v, want ErrTooLarge", err)
	}
	if _, err := tier.Get(id); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get = %v, want ErrNotFound", err)
	}
}

// TestClosedError: operations after Close report ErrClosed.
func TestClosedError(t *testing.T) {
	tier := New(Options{Capacity: 1 << 20})
	id := store.ChunkID{Bucket: "b", Key: "k"}
	if err := tier.Put(id, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := tier.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := tier.Get(id); !errors.Is(err, ErrClosed) {
		t.Fatalf("Get after Close = %v", err)
	}
	if err := tier.Put(id, []byte("x")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Put after Close = %v", err)
	}
	if err := tier.DeleteObject("b", "k"); !errors.Is(err, ErrClosed) {
		t.Fatalf("DeleteObject after Close = %v", err)
	}
}

// benchIDs returns n chunk IDs of a dataset of small objects.
func benchIDs(n int) []store.ChunkID {
	ids := make([]store.ChunkID, n)
	for i := range ids {
		ids[i] = store.ChunkID{Bucket: "train", Key: fmt.Sprintf("shard-%05d/img-%07d.jpg", i%97, i), ETag: "0123456789abcdef0123456789abcdef"}
	}
	return ids
}

// fullBenchTier returns a tier under policy holding the 4 KiB chunks of
// ids, and their data.
func fullBenchTier(b *testing.B, policy string, ids []store.ChunkID) (*Tier, []byte) {
	tier := New(Options{Capacity: 1 << 30, Policy: policy})
	b.Cleanup(func() { _ = tier.Close() })
	data := make([]byte, 4<<10)
	for _, id := range ids {
		if err := tier.Put(id, data); err != nil {
			b.Fatal(err)
		}
	}
	return tier, data
}

// BenchmarkGetSmall: warm-path hits on 4 KiB chunks, in random order, under
// each policy (the difference is the cost of counting accesses).
func BenchmarkGetSmall(b *testing.B) {
	const n = 1 << 14
	ids := benchIDs(n)
	for _, policy := range []string{PolicyLRU, PolicyTinyLFU} {
		b.Run(policy, func(b *testing.B) {
			tier, data := fullBenchTier(b, policy, ids)
			order := rand.Perm(n)
			b.SetBytes(int64(len(data)))
			for i := 0; b.Loop(); i++ {
				if _, err := tier.Get(ids[order[i&(n-1)]]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkGetSmallParallel: the same hits from GOMAXPROCS goroutines.
func BenchmarkGetSmallParallel(b *testing.B) {
	const n = 1 << 14
	ids := benchIDs(n)
	for _, policy := range []string{PolicyLRU, PolicyTinyLFU} {
		b.Run(policy, func(b *testing.B) {
			tier, data := fullBenchTier(b, policy, ids)
			b.SetBytes(int64(len(data)))
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				r := rand.New(rand.NewPCG(rand.Uint64(), 1))
				for pb.Next() {
					if _, err := tier.Get(ids[r.IntN(n)]); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkPutSmall: 4 KiB puts into a full tier, so each one evicts
// (PutAlways: Put would decline these never-read chunks).
func BenchmarkPutSmall(b *testing.B) {
	const n = 1 << 16
	ids := benchIDs(n)
	data := make([]byte, 4<<10)
	tier := New(Options{Capacity: int64(n/4) * charge(ids[0], data)})
	defer tier.Close()
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if err := tier.PutAlways(ids[i&(n-1)], data); err != nil {
			b.Fatal(err)
		}
	}
}

// TestPeekRecordsNothing: Peek returns a chunk without making it recent
// (LRU) or more popular (TinyLFU): a peeked chunk is evicted, or loses a
// tie, as if it had not been asked for.
func TestPeekRecordsNothing(t *testing.T) {
	ids := make([]store.ChunkID, 4)
	for i := range ids {
		ids[i] = store.ChunkID{Bucket: "b", Key: fmt.Sprintf("key-%d", i), ETag: "e"}
	}
	per := charge(ids[0], make([]byte, 1000))
	lru := New(Options{Capacity: 3 * per, Policy: PolicyLRU})
	defer lru.Close()
	for _, id := range ids[:3] {
		if err := lru.Put(id, make([]byte, 1000)); err != nil {
			t.Fatal(err)
		}
	}
	if b, err := lru.Peek(ids[0]); err != nil || len(b) != 1000 {
		t.Fatalf("Peek: %d bytes, %v", len(b), err)
	}
	if _, err := lru.Peek(ids[3]); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Peek of a missing chunk: %v", err)
	}
	if err := lru.Put(ids[3], make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	if _, err := lru.Get(ids[0]); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the peeked least recent chunk was kept: %v", err)
	}
	lfu := New(Options{Capacity: 3 * per, Policy: PolicyTinyLFU})
	defer lfu.Close()
	for _, id := range ids[:3] {
		if err := lfu.PutAlways(id, make([]byte, 1000)); err != nil {
			t.Fatal(err)
		}
	}
	for range 5 {
		lfu.Peek(ids[3]) // a missing chunk peeked at: no popularity
	}
	if err := lfu.Put(ids[3], make([]byte, 1000)); !errors.Is(err, store.ErrNotAdmitted) {
		t.Fatalf("Put after peeks only: %v, want ErrNotAdmitted", err)
	}
}
