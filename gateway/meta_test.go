// The metadata cache's bound, eviction order and drop sequence.
package gateway

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/granary-dev/granary/store"
)

func metaInfo(etag string) store.ObjectInfo { return store.ObjectInfo{ETag: etag} }

// TestMetaSecondChance: a key read since the last eviction outlives one
// that was not, however old; with every key read, the oldest goes.
func TestMetaSecondChance(t *testing.T) {
	c := newMetaCache(3)
	now := time.Now()
	for _, k := range []string{"a", "b", "c"} {
		c.set(k, metaInfo(k), now)
	}
	c.get("a")
	c.set("d", metaInfo("d"), now) // b: the oldest not read
	for k, want := range map[string]bool{"a": true, "b": false, "c": true, "d": true} {
		if _, ok := c.get(k); ok != want {
			t.Errorf("after d: %s held %v, want %v", k, ok, want)
		}
	}
	// a, c and d were all read just now: a full turn of second chances
	// ends where it began, at c (where d's put left the hand), and never
	// at the key being stored.
	c.set("e", metaInfo("e"), now)
	if _, ok := c.get("e"); !ok {
		t.Error("the key just stored was evicted")
	}
	if _, ok := c.get("c"); ok {
		t.Error("c, the furthest back, is still held")
	}
	if got, ok := c.get("d"); !ok || got.info.ETag != "d" {
		t.Errorf("d: %+v, %v", got.info, ok)
	}
}

// TestMetaDropFreesSlot: a dropped key's slot takes the next key, and
// nothing else is evicted for it.
func TestMetaDropFreesSlot(t *testing.T) {
	c := newMetaCache(2)
	now := time.Now()
	c.set("a", metaInfo("a"), now)
	c.set("b", metaInfo("b"), now)
	c.drop("a")
	c.set("c", metaInfo("c"), now)
	for k, want := range map[string]bool{"a": false, "b": true, "c": true} {
		if _, ok := c.get(k); ok != want {
			t.Errorf("%s held %v, want %v", k, ok, want)
		}
	}
}

// TestMetaBoundSharded: a cache large enough to shard never holds more
// than its max, however the keys spread, and keeps what was read.
func TestMetaBoundSharded(t *testing.T) {
	const max = metaShardMin + 7
	c := newMetaCache(max)
	if len(c.shards) != metaShards {
		t.Fatalf("%d shards, want %d", len(c.shards), metaShards)
	}
	now := time.Now()
	c.set("kept", metaInfo("kept"), now)
	for i := range 5 * max {
		c.get("kept")
		c.set(fmt.Sprint("k", i), metaInfo(""), now)
		if n := c.len(); n > max {
			t.Fatalf("after %d puts: %d entries, max %d", i+1, n, max)
		}
	}
	if n := c.len(); n < max-metaShards {
		t.Errorf("%d entries after filling, max %d", n, max)
	}
	if _, ok := c.get("kept"); !ok {
		t.Error("a key read before every put was evicted")
	}
}

// TestMetaDropBeatsLoad: an answer loaded before a drop of its key is not
// stored after it; a drop elsewhere in another shard does not hold it up,
// and dropAll counts against every key.
func TestMetaDropBeatsLoad(t *testing.T) {
	c := newMetaCache(metaShardMin)
	now := time.Now()
	seq := c.sequence("k")
	c.drop("k")
	c.putIf(seq, "k", metaInfo("old"), now)
	if _, ok := c.get("k"); ok {
		t.Fatal("an answer from before the drop was stored")
	}
	other := "x"
	for i := 0; c.shard(other) == c.shard("k"); i++ {
		other = fmt.Sprint("x", i)
	}
	seq = c.sequence("k")
	c.drop(other)
	c.putIf(seq, "k", metaInfo("new"), now)
	if got, ok := c.get("k"); !ok || got.info.ETag != "new" {
		t.Fatalf("after a drop in another shard: %+v, %v", got.info, ok)
	}
	seq = c.sequence("k")
	c.dropAll()
	c.putIf(seq, "k", metaInfo("stale"), now)
	if _, ok := c.get("k"); ok {
		t.Fatal("an answer from before dropAll was stored")
	}
}

// len counts the entries held, for tests.
func (c *metaCache) len() int {
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		n += len(s.m)
		s.mu.Unlock()
	}
	return n
}

// TestMetaLookupMatchesGet: lookup finds what get finds, in one shard and
// in many, for keys short and longer than its stack buffer, and misses a
// key that differs only in where bucket ends.
func TestMetaLookupMatchesGet(t *testing.T) {
	long := strings.Repeat("k", 300)
	for _, size := range []int{8, 4 * metaShardMin} {
		c := newMetaCache(size)
		now := time.Now()
		for _, k := range []string{"a", "ab", long} {
			c.set(metaKey("b", k), metaInfo(k), now)
		}
		for _, k := range []string{"a", "ab", long} {
			got, ok := c.lookup("b", k)
			if !ok || got.info.ETag != k {
				t.Errorf("cache of %d: lookup(b, %.8s...) = %q, %v; want %q", size, k, got.info.ETag, ok, k)
			}
		}
		if _, ok := c.lookup("ba", "b"); ok {
			t.Errorf("cache of %d: lookup(ba, b) found b/ab", size)
		}
	}
}

// BenchmarkMetaGet reads 100,000 cached keys in random order from every
// CPU at once: the warm path's metadata lookup, cold in the CPU's caches
// as in a data set read in random order.
func BenchmarkMetaGet(b *testing.B) {
	const n = 100_000
	c := newMetaCache(2 * n)
	keys := make([]string, n)
	now := time.Now()
	for i := range keys {
		keys[i] = fmt.Sprintf("train/shard-%06d.tar", i)
		c.set(metaKey("bucket", keys[i]), metaInfo(fmt.Sprint(i)), now)
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		r := rand.New(rand.NewPCG(rand.Uint64(), 1))
		for pb.Next() {
			if _, ok := c.lookup("bucket", keys[r.IntN(n)]); !ok {
				b.Fatal("miss")
			}
		}
	})
}
