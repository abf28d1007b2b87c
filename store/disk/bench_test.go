// Benchmarks of the disk tier: warm small-chunk reads and writes, and
// large-chunk reads.
package disk

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/granary-dev/granary/store"
)

// benchTier returns a tier in a fresh directory holding n chunks of size
// bytes, and their IDs.
func benchTier(b *testing.B, capacity int64, n, size int) (*Tier, []store.ChunkID) {
	tier := openT(b, Options{Dir: b.TempDir(), Capacity: capacity})
	ids := make([]store.ChunkID, n)
	data := make([]byte, size)
	for i := range ids {
		ids[i] = store.ChunkID{Bucket: "train", Key: fmt.Sprintf("shard-%03d/img-%07d.jpg", i%97, i), ETag: "0123456789abcdef0123456789abcdef"}
		mustPut(b, tier, ids[i], data)
	}
	return tier, ids
}

// BenchmarkGetSmall: verified reads of 4 KiB chunks (segment pread + CRC
// + index lookup), random order, from the page cache.
func BenchmarkGetSmall(b *testing.B) {
	tier, ids := benchTier(b, 1<<30, 1<<13, 4<<10)
	order := rand.Perm(len(ids))
	b.SetBytes(4 << 10)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := tier.Get(ids[order[i%len(order)]]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGetSmallParallel: the same reads from GOMAXPROCS goroutines.
func BenchmarkGetSmallParallel(b *testing.B) {
	tier, ids := benchTier(b, 1<<30, 1<<13, 4<<10)
	b.SetBytes(4 << 10)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		r := rand.New(rand.NewPCG(rand.Uint64(), 1))
		for pb.Next() {
			if _, err := tier.Get(ids[r.IntN(len(ids))]); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkPutSmall: 4 KiB puts of new chunks into a 64 MiB tier, so
// segments fill, seal and get evicted along the way. The tier evicts by
// LRU: under TinyLFU a full tier rightly turns away chunks never asked
// for, and the benchmark would stop at its first refusal.
func BenchmarkPutSmall(b *testing.B) {
	tier := openT(b, Options{Dir: b.TempDir(), Capacity: 64 << 20, Policy: PolicyLRU})
	data := make([]byte, 4<<10)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		id := store.ChunkID{Bucket: "train", Key: fmt.Sprintf("img-%09d.jpg", i), ETag: "0123456789abcdef0123456789abcdef"}
		mustPut(b, tier, id, data)
	}
}

// BenchmarkGetLarge: verified reads of 8 MiB chunk files.
func BenchmarkGetLarge(b *testing.B) {
	tier, ids := benchTier(b, 1<<30, 16, 8<<20)
	b.SetBytes(8 << 20)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := tier.Get(ids[i%len(ids)]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPutSmallParallel: 4 KiB puts from 8 goroutines per core, as
// concurrent cache fills do; index writes share commits. LRU, as
// BenchmarkPutSmall.
func BenchmarkPutSmallParallel(b *testing.B) {
	tier := openT(b, Options{Dir: b.TempDir(), Capacity: 64 << 20, Policy: PolicyLRU})
	data := make([]byte, 4<<10)
	var seq atomic.Int64
	b.SetBytes(int64(len(data)))
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := store.ChunkID{Bucket: "train", Key: fmt.Sprintf("img-%09d.jpg", seq.Add(1)), ETag: "0123456789abcdef0123456789abcdef"}
			if err := tier.Put(id, data); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkPutRandomParallel: BenchmarkPutSmallParallel with keys in
// random order, as a cold epoch's misses come: each insert lands in its
// own part of the index rather than at its end.
func BenchmarkPutRandomParallel(b *testing.B) {
	tier := openT(b, Options{Dir: b.TempDir(), Capacity: 64 << 20, Policy: PolicyLRU})
	data := make([]byte, 4<<10)
	b.SetBytes(int64(len(data)))
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		r := rand.New(rand.NewPCG(rand.Uint64(), 2))
		for pb.Next() {
			id := store.ChunkID{Bucket: "train", Key: fmt.Sprintf("shard-%016x/img.jpg", r.Uint64()), ETag: "0123456789abcdef0123456789abcdef"}
			if err := tier.Put(id, data); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
