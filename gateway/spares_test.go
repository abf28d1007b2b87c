// Spare buffers: a hop the hot tier declines gives its buffer back for
// the next hop, a copy a tier keeps never does, and reuse never shows a
// reader another chunk's bytes.
package gateway

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/granary-dev/granary/store/ram"
)

// spareSet seeds n objects of size bytes (one chunk each) behind c and,
// with heads, has every node learn their metadata, so that a read is a
// chunk hop where the node does not own the chunk (else a first call,
// which brings the metadata with the chunk).
func spareSet(t *testing.T, c *fakeCluster, n, size int, heads bool) (keys []string, data map[string][]byte) {
	t.Helper()
	keys, data = seedSet(t, newRigFor(t, c), n, size)
	for _, e := range c.engines {
		for _, key := range keys {
			if !heads {
				break
			}
			if _, err := e.Head(context.Background(), c.bucket, key); err != nil {
				t.Fatal(err)
			}
		}
	}
	return keys, data
}

// hopsOf reads, through node i, each key it does not own, one at a
// time, and checks every byte. After each read it waits (up to a minute)
// for the read's flight to let go of its buffer (wantSpare: to pool it).
func hopsOf(t *testing.T, c *fakeCluster, i int, keys []string, data map[string][]byte, wantSpare bool) (hops int) {
	t.Helper()
	e := c.engines[i]
	for _, key := range keys {
		if c.chunkOwner(key, 0) == i {
			continue
		}
		got, err := c.read(i, key)
		if err != nil || !bytes.Equal(got, data[key]) {
			t.Fatalf("node %d, %s: %d bytes, %v", i, key, len(got), err)
		}
		hops++
		settle(t, e)
		if wantSpare {
			awaitPooled(t, &e.spares, int64(hops))
		}
	}
	return hops
}

// awaitPooled waits up to a minute until s has pooled n buffers.
func awaitPooled(t *testing.T, s *spareBufs, n int64) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); s.pooled.Load() < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d buffers came back, not %d", s.pooled.Load(), n)
		}
	}
}

// wantReuse fails unless some of n flights, each run after the last one's
// buffer was pooled, took a pooled buffer. Not every one can: sync.Pool
// keeps a buffer in the slot of the processor that put it, which a
// goroutine on another cannot take, and a collection empties the pool.
func wantReuse(t *testing.T, s *spareBufs, n int) {
	t.Helper()
	if got := s.reused.Load(); got == 0 {
		t.Fatalf("%d flights after pooled ones reused no buffer (%d pooled)", n, s.pooled.Load())
	}
	t.Logf("%d flights reused %d pooled buffers", n, s.reused.Load())
}

func TestDeclinedHopsReuseTheirBuffers(t *testing.T) {
	// Hot tiers of 1 KiB refuse every copy (too large).
	c := newFakeCluster(t, fakeClusterOptions{n: 2, owners: 1, chunk: 64 << 10, hot: 1 << 10})
	keys, data := spareSet(t, c, 24, 40<<10+7, true)
	hops := hopsOf(t, c, 0, keys, data, true)
	hops += hopsOf(t, c, 0, keys, data, true)
	if hops < 4 {
		t.Fatalf("only %d of 48 reads were hops", hops)
	}
	wantReuse(t, &c.engines[0].spares, hops)
}

func TestFirstHopsReuseTheirBuffers(t *testing.T) {
	// No node has the metadata: each hop is a first call, the metadata
	// load's flight.
	c := newFakeCluster(t, fakeClusterOptions{n: 2, owners: 1, chunk: 64 << 10, hot: 1 << 10})
	keys, data := spareSet(t, c, 24, 40<<10+7, false)
	hops := hopsOf(t, c, 0, keys, data, true)
	if hops < 2 {
		t.Fatalf("only %d of 24 reads were hops", hops)
	}
	wantReuse(t, &c.engines[0].spares, hops)
}

func TestKeptHotCopiesAreNeverSpare(t *testing.T) {
	c := newFakeCluster(t, fakeClusterOptions{n: 2, owners: 1, chunk: 64 << 10})
	keys, data := spareSet(t, c, 24, 40<<10+7, true)
	if hops := hopsOf(t, c, 0, keys, data, false); hops == 0 {
		t.Fatal("no read was a hop")
	}
	e := c.engines[0]
	if e.spares.pooled.Load() != 0 || e.spares.reused.Load() != 0 {
		t.Fatalf("copies the hot tier kept were pooled (%d) or reused (%d)", e.spares.pooled.Load(), e.spares.reused.Load())
	}
	hopsOf(t, c, 0, keys, data, false) // the hot copies are intact
}

func TestSpareBuffersNeverCrossReaders(t *testing.T) {
	c := newFakeCluster(t, fakeClusterOptions{n: 3, owners: 1, chunk: 64 << 10, hot: 1 << 10})
	keys, data := spareSet(t, c, 16, 40<<10+7, true)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for range 60 {
				i, key := rng.IntN(len(c.engines)), keys[rng.IntN(len(keys))]
				got, err := c.read(i, key)
				if err != nil || !bytes.Equal(got, data[key]) {
					errs <- fmt.Errorf("node %d, %s: %d bytes, %v", i, key, len(got), err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var reused int64
	for _, e := range c.engines {
		settle(t, e)
		reused += e.spares.reused.Load()
	}
	if reused == 0 {
		t.Fatal("no buffer was reused: the test raced nothing")
	}
}

// missesOf reads each key once through r (cold: from the origin), checks
// every byte, and after each read waits (up to a minute) until the
// read's flights are through with their buffers: spare of them pooled per
// read.
func missesOf(t *testing.T, r *rig, keys []string, data map[string][]byte, spare int64) {
	t.Helper()
	for i, key := range keys {
		if got := r.read(key, nil); !bytes.Equal(got, data[key]) {
			t.Fatalf("%s: %d bytes, not the object's", key, len(got))
		}
		settle(t, r.e)
		awaitPooled(t, &r.e.spares, spare*int64(i+1))
	}
}

// seedSet seeds n objects of size bytes behind r.
func seedSet(t *testing.T, r *rig, n, size int) (keys []string, data map[string][]byte) {
	t.Helper()
	data = map[string][]byte{}
	for i := range n {
		key := fmt.Sprintf("obj%d", i)
		data[key] = randBytes(t, size)
		r.seed(key, data[key])
		keys = append(keys, key)
	}
	return keys, data
}

func TestMissesRAMDeclinesReuseTheirBuffersAfterTheDisk(t *testing.T) {
	// A RAM tier of 1 KiB refuses every chunk (too large); the disk
	// tier takes them all. Objects of three chunks: chunk 0 comes with
	// the metadata (its flight is the load's, never spare), chunks 1 and
	// 2 through the ladder.
	r := newRig(t, rigOptions{chunk: 64 << 10, ramCap: 1 << 10})
	keys, data := seedSet(t, r, 12, 3*64<<10)
	missesOf(t, r, keys, data, 2)
	wantReuse(t, &r.e.spares, 2*len(keys))
	// The disk wrote each chunk before its buffer went on to the next.
	gets := r.originGets()
	for _, key := range keys {
		if got := r.read(key, nil); !bytes.Equal(got, data[key]) {
			t.Fatalf("%s from disk: %d bytes, not the object's", key, len(got))
		}
	}
	if n := r.originGets() - gets; n != 0 {
		t.Fatalf("the second pass read the origin %d times, not the disk", n)
	}
}

func TestColdSmallMissesReuseTheirBuffers(t *testing.T) {
	// One chunk each: every miss is the metadata load's flight.
	r := newRig(t, rigOptions{chunk: 64 << 10, ramCap: 1 << 10})
	keys, data := seedSet(t, r, 24, 40<<10+7)
	missesOf(t, r, keys, data, 1)
	wantReuse(t, &r.e.spares, len(keys))
	for _, key := range keys {
		if got := r.read(key, nil); !bytes.Equal(got, data[key]) {
			t.Fatalf("%s from disk: %d bytes, not the object's", key, len(got))
		}
	}
}

// heapChunk is a chunk size the RAM tier keeps by reference (below its
// arena's smallest, which it copies into a slot).
const heapChunk = ram.ArenaMin / 2

func TestChunksRAMKeepsAreNeverSpare(t *testing.T) {
	r := newRig(t, rigOptions{chunk: heapChunk})
	keys, data := seedSet(t, r, 12, 3*heapChunk)
	missesOf(t, r, keys, data, 0)
	if r.e.spares.pooled.Load() != 0 || r.e.spares.reused.Load() != 0 {
		t.Fatalf("chunks RAM kept were pooled (%d) or reused (%d)", r.e.spares.pooled.Load(), r.e.spares.reused.Load())
	}
	for _, key := range keys {
		if got := r.read(key, nil); !bytes.Equal(got, data[key]) {
			t.Fatalf("%s from RAM: %d bytes, not the object's", key, len(got))
		}
	}
}

func TestDiskHitsRAMDeclinesReuseTheirBuffers(t *testing.T) {
	r := newRig(t, rigOptions{chunk: 64 << 10, ramCap: 1 << 10})
	keys, data := seedSet(t, r, 12, 3*64<<10)
	missesOf(t, r, keys, data, 3)
	gets, before := r.originGets(), r.e.spares.reused.Load()
	for pass := range 2 {
		for _, key := range keys {
			if got := r.read(key, nil); !bytes.Equal(got, data[key]) {
				t.Fatalf("pass %d, %s from disk: %d bytes, not the object's", pass, key, len(got))
			}
		}
	}
	if n := r.originGets() - gets; n != 0 {
		t.Fatalf("reads from disk read the origin %d times", n)
	}
	if r.e.spares.reused.Load() == before {
		t.Fatalf("72 disk hits the RAM tier declined reused no buffer (%d pooled)", r.e.spares.pooled.Load())
	}
}

// TestChunksRAMCopiesReuseTheirBuffers: a chunk the RAM tier copies into
// its arena leaves the miss's buffer to the next miss, and the copy
// stays whole while the buffer is reused.
func TestChunksRAMCopiesReuseTheirBuffers(t *testing.T) {
	r := newRig(t, rigOptions{chunk: ram.ArenaMin})
	keys, data := seedSet(t, r, 12, 3*ram.ArenaMin)
	missesOf(t, r, keys, data, 2)
	wantReuse(t, &r.e.spares, 2*len(keys))
	gets := r.originGets()
	for _, key := range keys {
		if got := r.read(key, nil); !bytes.Equal(got, data[key]) {
			t.Fatalf("%s from RAM: %d bytes, not the object's", key, len(got))
		}
	}
	if n := r.originGets() - gets; n != 0 {
		t.Fatalf("the second pass read the origin %d times, not RAM", n)
	}
}

func TestDiskHitsRAMKeepsAreNeverSpare(t *testing.T) {
	r := newRig(t, rigOptions{chunk: heapChunk})
	keys, data := seedSet(t, r, 12, 3*heapChunk)
	missesOf(t, r, keys, data, 0)
	for deadline := time.Now().Add(time.Minute); r.e.filler.queued.Load() > 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the disk queue did not drain in a minute")
		}
	}
	for _, key := range keys { // RAM forgets: the next reads are disk hits it keeps
		if err := r.ram.DeleteObject(r.bucket, key); err != nil {
			t.Fatal(err)
		}
	}
	for _, key := range keys {
		if got := r.read(key, nil); !bytes.Equal(got, data[key]) {
			t.Fatalf("%s from disk: %d bytes, not the object's", key, len(got))
		}
	}
	if n := r.e.spares.pooled.Load(); n != 0 {
		t.Fatalf("%d disk hits RAM kept were pooled", n)
	}
	// Flights of other objects would take a pooled buffer RAM holds, and
	// overwrite what the first ones then read from RAM.
	for i := range 12 {
		key := fmt.Sprintf("other%d", i)
		b := randBytes(t, 3*heapChunk)
		r.seed(key, b)
		if got := r.read(key, nil); !bytes.Equal(got, b) {
			t.Fatalf("%s: %d bytes, not the object's", key, len(got))
		}
	}
	for _, key := range keys {
		if got := r.read(key, nil); !bytes.Equal(got, data[key]) {
			t.Fatalf("%s from RAM: %d bytes, not the object's", key, len(got))
		}
	}
}
