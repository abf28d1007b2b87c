// Tests of the admission policy: epochs over more data than the tier
// holds, frequency wins over a cold unit, PutAlways, Declined, "lru".
package disk

import (
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/storetest"
)

// Epoch workload: epochN chunks of epochChunk bytes, a tier for about
// half of them, segments of 24 chunks.
const (
	epochN     = 3000
	epochChunk = 8 << 10
	epochs     = 5
)

// openFixed opens a tier whose sketch hashes IDs without a random seed,
// so collisions, and the test's outcome, are the same on every run.
func openFixed(t *testing.T, opts Options) *Tier {
	tier := openT(t, opts)
	if tier.adm != nil {
		tier.adm.hash = func(id store.ChunkID) uint64 {
			h := fnv.New64a()
			writeID(h, id)
			return h.Sum64()
		}
	}
	return tier
}

func epochOptions(dir, policy string) Options {
	return Options{
		Dir: dir, Capacity: epochN / 2 * epochChunk, SegmentSize: 24 * epochChunk,
		SketchItems: epochN, Policy: policy,
	}
}

// runEpochs reads every chunk once per epoch in a fresh random order
// (fixed seeds), putting it on a miss, as training does. It returns the
// hit rate of each epoch and the chunks held after the first.
func runEpochs(t *testing.T, policy string) (rates []float64, held int64) {
	tier := openFixed(t, epochOptions(t.TempDir(), policy))
	ids := make([]store.ChunkID, epochN)
	for i := range ids {
		ids[i] = store.ChunkID{Bucket: "train", Key: fmt.Sprintf("shard-%04d", i/100), ETag: "e1", Index: int64(i % 100)}
	}
	data := make([]byte, epochChunk) // content is not what this test checks
	r := rand.New(rand.NewPCG(42, 7))
	for e := range epochs {
		hits := 0
		for _, i := range r.Perm(epochN) {
			_, err := tier.Get(ids[i])
			if err == nil {
				hits++
				continue
			}
			if !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("epoch %d: Get: %v", e+1, err)
			}
			if err := tier.Put(ids[i], data); err != nil && !errors.Is(err, store.ErrNotAdmitted) {
				t.Fatalf("epoch %d: Put: %v", e+1, err)
			}
		}
		rates = append(rates, float64(hits)/epochN)
		if e == 0 {
			held = tier.Stats().Chunks
		}
	}
	s := tier.Stats()
	if policy == PolicyLRU && s.Declined != 0 {
		t.Fatalf("lru declined %d Puts", s.Declined)
	}
	t.Logf("%s: stats after %d epochs: %+v", policy, epochs, s)
	return rates, held
}

func formatRates(rates []float64) string {
	var b strings.Builder
	for i, r := range rates {
		fmt.Fprintf(&b, " e%d=%.3f", i+1, r)
	}
	return b.String()
}

// TestEpochs: with TinyLFU the hit rate of epochs 2..5 stays near the
// share of the data set the tier holds; LRU's falls far below it.
func TestEpochs(t *testing.T) {
	lfu, held := runEpochs(t, PolicyTinyLFU)
	lru, lruHeld := runEpochs(t, PolicyLRU)
	t.Logf("tinylfu (held %d of %d after epoch 1):%s", held, epochN, formatRates(lfu))
	t.Logf("lru     (held %d of %d after epoch 1):%s", lruHeld, epochN, formatRates(lru))
	want := 0.9 * float64(held) / epochN
	var lfuSum, lruSum float64
	for e := 1; e < epochs; e++ {
		if lfu[e] < want {
			t.Errorf("tinylfu epoch %d: hit rate %.3f < %.3f (0.9 x held/N)", e+1, lfu[e], want)
		}
		if lru[e] >= lfu[e] {
			t.Errorf("epoch %d: lru hit rate %.3f not below tinylfu's %.3f", e+1, lru[e], lfu[e])
		}
		lfuSum, lruSum = lfuSum+lfu[e], lruSum+lru[e]
	}
	if lruSum > 0.85*lfuSum {
		t.Errorf("lru's mean hit rate over epochs 2..%d (%.3f) not clearly below tinylfu's (%.3f)",
			epochs, lruSum/(epochs-1), lfuSum/(epochs-1))
	}
}

// smallOptions: a 1 MiB tier of 64 KiB segments, 4 chunks of 16 KiB each.
// Under PolicyTinyLFU eviction leaves it between 0.8 and 0.95 full, past
// LowWater, where every Put is compared.
func smallOptions(dir, policy string) Options {
	return Options{Dir: dir, Capacity: 1 << 20, SegmentSize: 64 << 10, LowWater: 0.8, Policy: policy}
}

// fillUntilEvicted stores never-read chunks of 16 KiB with PutAlways
// (Put would decline the one that triggers the first eviction) until the
// tier has evicted, and returns their IDs.
func fillUntilEvicted(t *testing.T, tier *Tier) []store.ChunkID {
	t.Helper()
	var ids []store.ChunkID
	for i := 0; tier.Stats().Evictions == 0; i++ {
		if i > 200 {
			t.Fatal("no eviction after 3 MiB of puts")
		}
		id, data := chunk(fmt.Sprintf("fill%d", i), 0, 16<<10)
		if err := tier.PutAlways(id, data); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// tierState is what a declined Put must leave as it was.
type tierState struct {
	stats Stats
	files int64
	lru   uint64
}

func stateOf(t *testing.T, tier *Tier, dir string) tierState {
	t.Helper()
	tier.mu.Lock()
	back := tier.lru.back().id
	tier.mu.Unlock()
	return tierState{tier.DiskStats(), diskUsage(t, dir), back}
}

// getN reads id n times (misses: it is not cached).
func getN(t *testing.T, tier *Tier, id store.ChunkID, n int) {
	t.Helper()
	for range n {
		mustMiss(t, tier, id)
	}
}

// TestAdmission: once the tier is full, a chunk asked for more often than
// the chunks of the LRU unit is admitted; one asked for as often (a tie)
// or never is declined, which changes nothing but Declined; PutAlways
// stores it anyway.
func TestAdmission(t *testing.T) {
	dir := t.TempDir()
	tier := openFixed(t, smallOptions(dir, ""))
	for _, id := range fillUntilEvicted(t, tier) {
		if data, err := tier.Get(id); err == nil { // every held chunk: 1 access
			if string(data) != string(storetest.TierPayload(id, 16<<10)) {
				t.Fatalf("Get(%s): wrong bytes", id.Key)
			}
		}
	}
	cold, coldData := chunk("cold", 0, 16<<10)
	tie, tieData := chunk("tie", 0, 16<<10)
	getN(t, tier, tie, 2) // 1 before the miss that puts it: as the units
	for _, c := range []struct {
		id   store.ChunkID
		data []byte
	}{{cold, coldData}, {tie, tieData}} {
		before := stateOf(t, tier, dir)
		if err := tier.Put(c.id, c.data); !errors.Is(err, store.ErrNotAdmitted) {
			t.Fatalf("Put(%s) into a full tier = %v, want ErrNotAdmitted", c.id.Key, err)
		}
		after := stateOf(t, tier, dir)
		before.stats.Declined++
		if after != before {
			t.Fatalf("declined Put(%s) changed the tier:\n%+v\n%+v", c.id.Key, before, after)
		}
		if _, err := tier.idx.Lookup(c.id); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("declined chunk %s indexed: %v", c.id.Key, err)
		}
	}
	hot, hotData := chunk("hot", 0, 16<<10)
	getN(t, tier, hot, 4) // 3 before the miss that puts it: a whole access more than the units' 1
	mustPut(t, tier, hot, hotData)
	mustGet(t, tier, hot, hotData)
	if err := tier.PutAlways(cold, coldData); err != nil {
		t.Fatalf("PutAlways into a full tier: %v", err)
	}
	mustGet(t, tier, cold, coldData)
	if s := tier.Stats(); s.Declined != 2 || s.UsedBytes > 1<<20 {
		t.Fatalf("Stats = %+v, want Declined 2 within the budget", s)
	}
}

// TestUnseenReadDoesNotLetAnOvercountIn: a read that a tier in front
// served (RAM) never reaches this one, so a unit's mean can fall a
// fraction short of its chunks' counts. A candidate overcounted by one
// (read as often as the units, plus a sketch collision) must still lose
// to it; one read a whole access more than the units wins.
func TestUnseenReadDoesNotLetAnOvercountIn(t *testing.T) {
	tier := openFixed(t, smallOptions(t.TempDir(), ""))
	unseen := false
	for _, id := range fillUntilEvicted(t, tier) {
		if _, err := tier.Peek(id); err != nil {
			continue // evicted
		}
		if !unseen {
			// The oldest unit's first chunk: its read was served in
			// front. The unit's other chunks are read first, so it stays
			// the one eviction would take.
			unseen = true
			continue
		}
		if _, err := tier.Get(id); err != nil {
			t.Fatalf("Get(%s): %v", id.Key, err)
		}
	}
	over, overData := chunk("over", 0, 16<<10)
	getN(t, tier, over, 3) // 2 before the miss that puts it: the units' 1, plus one
	if err := tier.Put(over, overData); !errors.Is(err, store.ErrNotAdmitted) {
		t.Fatalf("Put of a chunk overcounted by one against a unit short of one read = %v, want ErrNotAdmitted", err)
	}
	hot, hotData := chunk("hot", 0, 16<<10)
	getN(t, tier, hot, 4) // 3 before its miss: a whole access more than the units
	mustPut(t, tier, hot, hotData)
	mustGet(t, tier, hot, hotData)
}

// TestReadsServedInFrontCount: reads of held chunks that a tier in front
// served (NoteReads) count in their units as Gets here would, so a chunk
// read more often than the units' counts without them, and no more
// often than the units with them, is declined. A chunk the tier does not
// hold takes no count.
func TestReadsServedInFrontCount(t *testing.T) {
	tier := openFixed(t, smallOptions(t.TempDir(), ""))
	stranger, _ := chunk("stranger", 0, 16<<10)
	tier.NoteReads(stranger, 5)
	for _, id := range fillUntilEvicted(t, tier) {
		tier.NoteReads(id, 1) // evicted ones are not held: ignored
	}
	tier.mu.Lock()
	for u := tier.lru.back(); u != nil; u = tier.lru.prevOf(u) {
		if u.chunks > 0 && u.freq != u.chunks {
			t.Errorf("unit %d: frequency %d for %d chunks each read once in front", u.id, u.freq, u.chunks)
		}
	}
	tier.mu.Unlock()
	over, overData := chunk("over", 0, 16<<10)
	getN(t, tier, over, 3) // 2 before the miss that puts it: beats 0, not 1 by a whole access
	if err := tier.Put(over, overData); !errors.Is(err, store.ErrNotAdmitted) {
		t.Fatalf("Put against units read once in front = %v, want ErrNotAdmitted", err)
	}
}

// TestLRUNeverDeclines: under PolicyLRU every Put into a full tier is
// stored, evicting the least recently used units.
func TestLRUNeverDeclines(t *testing.T) {
	tier := openT(t, smallOptions(t.TempDir(), PolicyLRU))
	for i := range 200 {
		id, data := chunk(fmt.Sprintf("k%d", i), 0, 16<<10)
		mustPut(t, tier, id, data)
		mustGet(t, tier, id, data)
	}
	if s := tier.Stats(); s.Declined != 0 || s.Evictions == 0 {
		t.Fatalf("Stats after 3 MiB of puts into 1 MiB = %+v", s)
	}
}

func TestPolicyOption(t *testing.T) {
	if _, err := Open(Options{Dir: t.TempDir(), Capacity: 1 << 20, Policy: "lfu"}); err == nil {
		t.Fatal("Open accepted an unknown policy")
	}
	o, err := Options{Dir: "x", Capacity: 1 << 40}.normalize()
	if err != nil || o.Policy != PolicyTinyLFU || o.SketchItems != 1<<24>>2 {
		t.Fatalf("defaults: policy %q, sketch items %d, %v", o.Policy, o.SketchItems, err)
	}
	if o, _ := (Options{Dir: "x", Capacity: 1 << 20}).normalize(); o.SketchItems != minSketchItems {
		t.Fatalf("sketch items of a small tier = %d", o.SketchItems)
	}
	if tier := openT(t, smallOptions(t.TempDir(), PolicyLRU)); tier.adm != nil {
		t.Fatal("an lru tier keeps a sketch")
	}
}

// unitOf returns the counters of the unit holding id.
func unitOf(t *testing.T, tier *Tier, id store.ChunkID) (chunks, freq int64) {
	t.Helper()
	loc := lookup(t, tier, id)
	tier.mu.Lock()
	defer tier.mu.Unlock()
	u := tier.units[loc.Unit]
	if u == nil {
		t.Fatalf("unit of %s not live", id.Key)
	}
	return u.chunks, u.freq
}

// TestHalving: units age with the sketch, every period Gets.
func TestHalving(t *testing.T) {
	tier := openFixed(t, smallOptions(t.TempDir(), ""))
	id, data := chunk("k", 0, 4<<10)
	getN(t, tier, id, 1)
	mustPut(t, tier, id, data)
	for range 4 {
		mustGet(t, tier, id, data)
	}
	if c, f := unitOf(t, tier, id); c != 1 || f != 5 || tier.adm.estimate(id) != 5 {
		t.Fatalf("before halving: unit %d chunks, freq %d; sketch %d", c, f, tier.adm.estimate(id))
	}
	other, _ := chunk("other", 0, 1)
	getN(t, tier, other, int(tier.adm.period)-5-1)
	if _, f := unitOf(t, tier, id); f != 5 {
		t.Fatalf("freq %d halved early", f)
	}
	getN(t, tier, other, 1)
	if _, f := unitOf(t, tier, id); f != 2 || tier.adm.estimate(id) != 2 {
		t.Fatalf("after halving: unit freq %d, sketch %d; want 2 and 2", f, tier.adm.estimate(id))
	}
}

// TestCountersRestartAndDelete: reopened segments count their chunks, one
// access each; a deleted chunk leaves its segment's count.
func TestCountersRestartAndDelete(t *testing.T) {
	dir := t.TempDir()
	opts := smallOptions(dir, "")
	opts.Capacity = 4 << 20 // 40 chunks of 8 KiB, 8 a segment: no eviction
	tier := openT(t, opts)
	var ids []store.ChunkID
	for i := range 40 {
		id, data := chunk(fmt.Sprintf("k%d", i), 0, 8<<10)
		mustPut(t, tier, id, data)
		ids = append(ids, id)
	}
	if err := tier.Close(); err != nil {
		t.Fatal(err)
	}
	tier = openT(t, opts)
	for _, id := range ids {
		if c, f := unitOf(t, tier, id); c != 8 || f != 8 {
			t.Fatalf("after reopen, unit of %s: %d chunks, freq %d; want 8 and 8", id.Key, c, f)
		}
	}
	if err := tier.DeleteObject("b", "k0"); err != nil {
		t.Fatal(err)
	}
	if c, f := unitOf(t, tier, ids[1]); c != 7 || f != 7 {
		t.Fatalf("after a delete: %d chunks, freq %d; want 7 and 7", c, f)
	}
}

// TestPeekRecordsNothing: Peek reads a chunk without counting an access:
// its unit's frequency and the sketch stay as they were, where a Get adds
// one to each.
func TestPeekRecordsNothing(t *testing.T) {
	tier := openT(t, Options{Dir: t.TempDir(), Capacity: 64 << 20})
	id, data := chunk("k", 0, 4<<10)
	mustPut(t, tier, id, data)
	u := tier.units[lookup(t, tier, id).Unit]
	freq := func() int64 { tier.mu.Lock(); defer tier.mu.Unlock(); return u.freq }
	f0, e0 := freq(), tier.adm.sk.Estimate(tier.adm.hash(id))
	for range 3 {
		if b, err := tier.Peek(id); err != nil || !bytes.Equal(b, data) {
			t.Fatalf("Peek: %v", err)
		}
	}
	if f, e := freq(), tier.adm.sk.Estimate(tier.adm.hash(id)); f != f0 || e != e0 {
		t.Fatalf("Peek counted: unit freq %d -> %d, estimate %d -> %d", f0, f, e0, e)
	}
	if _, err := tier.Get(id); err != nil {
		t.Fatal(err)
	}
	if f, e := freq(), tier.adm.sk.Estimate(tier.adm.hash(id)); f != f0+1 || e != e0+1 {
		t.Fatalf("Get: unit freq %d -> %d, estimate %d -> %d, want one more each", f0, f, e0, e)
	}
}

// TestConcurrentFillStopsAtHighWater: many Puts at once into a filling
// tinylfu tier (each chunk asked for once: none beats a cached unit) stop
// at HighWater. The check of the room left and the reservation of it are
// one step, so concurrent Puts cannot all pass one check and together
// take the tier past HighWater, which would evict cached units and leave
// the tier at LowWater for good. Each Put yields its P just before that
// step, as a busy machine preempts it, so that the others catch up.
func TestConcurrentFillStopsAtHighWater(t *testing.T) {
	const chunk = 8 << 10
	tier := openFixed(t, Options{Dir: t.TempDir(), Capacity: 256 * chunk, SegmentSize: 16 * chunk})
	tier.beforeReserve = runtime.Gosched
	data := make([]byte, chunk)
	var wg sync.WaitGroup
	for g := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 16 {
				id := store.ChunkID{Bucket: "b", Key: fmt.Sprintf("k%02d-%02d", g, i), ETag: "e", Index: 0}
				if _, err := tier.Get(id); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("Get %v: %v", id, err)
				}
				if err := tier.Put(id, data); err != nil && !errors.Is(err, store.ErrNotAdmitted) {
					t.Errorf("Put %v: %v", id, err)
				}
			}
		}()
	}
	wg.Wait()
	s := tier.Stats()
	high := int64(DefaultHighWater * float64(s.CapacityBytes))
	if s.Evictions != 0 || s.UsedBytes > high || s.UsedBytes+chunk <= high {
		t.Fatalf("after 1,024 Puts of 8 KiB at once: %d evictions, %d bytes used (want none, and within a chunk below %d)",
			s.Evictions, s.UsedBytes, high)
	}
}
