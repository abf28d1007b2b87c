// Benchmarks of the engine over a real MinIO: cold and warm reads of a
// large object, against reading MinIO directly in the same run.
package gateway

import (
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/granary-dev/granary/store"
)

const benchObject = 256 << 20

func seedBench(b *testing.B, r *rig) {
	data := randBytes(b, benchObject)
	r.seed("big", data)
}

// BenchmarkLargeRead reads a 256 MiB object: from MinIO directly (the
// baseline), through a cold engine, and through a warm one.
func BenchmarkLargeRead(b *testing.B) {
	r := newRig(b, rigOptions{fresh: Freshness{Mode: Immutable}})
	seedBench(b, r)
	ctx := context.Background()
	b.Run("minio-direct", func(b *testing.B) {
		b.SetBytes(benchObject)
		for i := 0; i < b.N; i++ {
			rc, _, err := r.origin.Get(ctx, r.bucket, "big", store.ReadRange{Length: -1})
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, rc)
			rc.Close()
		}
	})
	b.Run("cold", func(b *testing.B) {
		b.SetBytes(benchObject)
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			r.e.forgetObject(r.bucket, "big")
			b.StartTimer()
			readAll(b, r, "big")
		}
	})
	b.Run("warm", func(b *testing.B) {
		readAll(b, r, "big")
		b.SetBytes(benchObject)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			readAll(b, r, "big")
		}
	})
}

func readAll(b *testing.B, r *rig, key string) {
	obj, err := r.e.Get(context.Background(), r.bucket, key, GetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	n, err := io.Copy(io.Discard, obj)
	obj.Close()
	if err != nil || n != benchObject {
		b.Fatal(fmt.Sprint(n, err))
	}
}

// BenchmarkWarmGet reads objects that the RAM tier holds: a small object
// (one chunk, the Get fast path) and a ranged read across four chunks
// (the object reader's window), reporting the allocations per read.
func BenchmarkWarmGet(b *testing.B) {
	r := newRig(b, rigOptions{chunk: 64 << 10, fresh: Freshness{Mode: Immutable}})
	r.seed("small", randBytes(b, 16<<10))
	r.seed("multi", randBytes(b, 4*64<<10))
	for _, c := range []struct {
		name, key string
		n         int64
	}{{"one-chunk", "small", 16 << 10}, {"four-chunks", "multi", 4 * 64 << 10}} {
		b.Run(c.name, func(b *testing.B) {
			warmRead(b, r, c.key, c.n)
			b.SetBytes(c.n)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				warmRead(b, r, c.key, c.n)
			}
		})
	}
}

func warmRead(b *testing.B, r *rig, key string, size int64) {
	obj, err := r.e.Get(context.Background(), r.bucket, key, GetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	n, err := io.Copy(io.Discard, obj)
	obj.Close()
	if err != nil || n != size {
		b.Fatal(fmt.Sprint(n, err))
	}
}
