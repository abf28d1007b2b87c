// Epochs through the engine: a data set twice the cache read in a fresh
// random order each epoch by 16 readers. With tinylfu the hit rate from
// epoch 2 on approaches cache/dataset; with lru it stays well below. Run
// with the disk as the cache (and a small RAM tier in front) and with
// RAM alone, since each tier has its own admission.
package gateway

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"

	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/disk"
	"github.com/granary-dev/granary/store/ram"
)

const (
	epochFiles = 1200
	epochSize  = 30 << 10
)

func TestEpochsHitRate(t *testing.T) {
	r := newRig(t, rigOptions{chunk: 64 << 10})
	keys := make([]string, epochFiles)
	for i := range keys {
		keys[i] = fmt.Sprintf("train/%05d", i)
	}
	seedParallel(t, r, keys, epochSize)
	half := int64(epochFiles * epochSize / 2)
	for _, cfg := range []struct {
		name      string
		ram, disk int64
	}{{"disk", 128 << 10, half}, {"ram", half, 0}} {
		rates := map[string][]float64{}
		for _, pol := range []string{"lru", "tinylfu"} {
			e, capacity := epochEngine(t, r.origin, pol, cfg.ram, cfg.disk)
			for ep := range 4 {
				rates[pol] = append(rates[pol], readEpoch(t, e, r.bucket, keys, uint64(ep)))
				awaitDiskFills(t, e)
			}
			e.Close()
			bound := float64(capacity) / float64(epochFiles*epochSize)
			t.Logf("%s tier, %s: hit rates %.3f (bound %.3f)", cfg.name, pol, rates[pol], bound)
			if pol == "tinylfu" {
				for ep, h := range rates[pol][1:] {
					if h < 0.9*bound {
						t.Errorf("%s tier, tinylfu epoch %d: hit rate %.3f < 0.9 x %.3f", cfg.name, ep+2, h, bound)
					}
				}
			}
		}
		for ep := 1; ep < 4; ep++ {
			if rates["lru"][ep] >= rates["tinylfu"][ep] {
				t.Errorf("%s tier, epoch %d: lru %.3f not below tinylfu %.3f", cfg.name, ep+1, rates["lru"][ep], rates["tinylfu"][ep])
			}
		}
	}
}

// epochEngine builds an engine over origin with the given tier budgets
// (disk 0: none) and returns it with the capacity of its largest tier.
func epochEngine(t *testing.T, origin store.Origin, policy string, ramCap, diskCap int64) (*Engine, int64) {
	opts := Options{Origin: origin, ChunkSize: 64 << 10, Freshness: Freshness{Mode: Immutable}, Logger: zerolog.Nop(),
		RAM: ram.New(ram.Options{Capacity: ramCap, Policy: policy})}
	capacity := ramCap
	if diskCap > 0 {
		d, err := disk.Open(disk.Options{Dir: t.TempDir(), Capacity: diskCap, SegmentSize: diskCap / 15,
			Policy: policy, Logger: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		opts.Disk, capacity = d, diskCap
	}
	e, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return e, capacity
}

// readEpoch reads every key once in a random order with 16 readers and
// returns the epoch's hit rate (chunk lookups of the bucket).
func readEpoch(t *testing.T, e *Engine, bucket string, keys []string, seed uint64) float64 {
	order := rand.New(rand.NewPCG(seed, 7)).Perm(len(keys))
	c := e.buckets.of(bucket)
	h0, m0 := c.hits.Load(), c.misses.Load()
	shuffled := make([]string, len(keys))
	for i, j := range order {
		shuffled[i] = keys[j]
	}
	parallel16(shuffled, func(k string) {
		obj, err := e.Get(context.Background(), bucket, k, GetOptions{})
		if err != nil {
			t.Error(err)
			return
		}
		if n, err := io.Copy(io.Discard, obj); err != nil || n != epochSize {
			t.Errorf("%s: %d bytes, %v", k, n, err)
		}
		obj.Close()
	})
	h, m := c.hits.Load()-h0, c.misses.Load()-m0
	return float64(h) / float64(h+m)
}

// awaitDiskFills waits until e's disk filler has written every chunk it
// queued, so an epoch's hit rate measures admission and eviction, not how
// far the disk writers are behind on a busy machine; and fails if any
// chunk was dropped for a full queue.
func awaitDiskFills(t *testing.T, e *Engine) {
	t.Helper()
	if e.filler == nil {
		return
	}
	deadline := time.Now().Add(2 * time.Minute)
	for e.filler.queued.Load() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("disk fills still queued after 2 minutes: %d bytes", e.filler.queued.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := testutil.ToFloat64(e.filler.dropped); n > 0 {
		t.Fatalf("%v disk fills dropped for a full queue", n)
	}
}

// seedParallel writes one size-byte object per key to the rig's origin.
func seedParallel(t *testing.T, r *rig, keys []string, size int) {
	data := randBytes(t, size)
	parallel16(keys, func(k string) {
		if _, err := r.origin.Put(context.Background(), r.bucket, k, bytes.NewReader(data), int64(size), store.ObjectMeta{}); err != nil {
			t.Error(err)
		}
	})
}

// parallel16 calls fn for every key, in order, 16 at a time.
func parallel16(keys []string, fn func(string)) {
	work := make(chan string)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range work {
				fn(k)
			}
		}()
	}
	for _, k := range keys {
		work <- k
	}
	close(work)
	wg.Wait()
}
