// Tests of the admission policy: random-order epochs over twice the
// capacity (TinyLFU holds a fixed set, LRU cycles), hot chunks still get
// in, declined Puts change nothing, PutAlways bypasses the filter.
package ram

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/granary-dev/granary/store"
)

// sameSizeIDs returns n chunk IDs whose strings have equal lengths, so
// every chunk of one data size costs the same.
func sameSizeIDs(n int) []store.ChunkID {
	ids := make([]store.ChunkID, n)
	for i := range ids {
		ids[i] = store.ChunkID{Bucket: "train", Key: fmt.Sprintf("img-%06d.jpg", i), ETag: "etag-1"}
	}
	return ids
}

// readThrough is what the gateway does per access: Get, and Put on a
// miss. It reports whether the Get hit.
func readThrough(t *testing.T, tier *Tier, id store.ChunkID, data []byte) bool {
	t.Helper()
	if _, err := tier.Get(id); err == nil {
		return true
	} else if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get(%v): %v", id, err)
	}
	if err := tier.Put(id, data); err != nil && !errors.Is(err, store.ErrNotAdmitted) {
		t.Fatalf("Put(%v): %v", id, err)
	}
	return false
}

// runEpochs reads every id once per epoch, each epoch in a fresh random
// order (fixed seeds), and returns the hit rate of each epoch and the
// number of chunks held after the first.
func runEpochs(t *testing.T, tier *Tier, ids []store.ChunkID, epochs int, data []byte) ([]float64, int64) {
	t.Helper()
	r := rand.New(rand.NewPCG(2026, 6))
	var rates []float64
	var held int64
	for ep := range epochs {
		hits := 0
		for _, i := range r.Perm(len(ids)) {
			if readThrough(t, tier, ids[i], data) {
				hits++
			}
		}
		rates = append(rates, float64(hits)/float64(len(ids)))
		if ep == 0 {
			held = tier.Stats().Chunks
		}
	}
	return rates, held
}

// TestEpochs: random-order epochs over a data set twice the tier. From
// epoch 2 on, TinyLFU hits about capacity/N (it keeps a fixed set); LRU
// evicts each chunk shortly before it is read again.
func TestEpochs(t *testing.T) {
	const n, epochs = 4000, 5
	ids := sameSizeIDs(n)
	data := make([]byte, 4<<10)
	capacity := int64(n/2) * charge(ids[0], data)
	rates := map[string][]float64{}
	for _, policy := range []string{PolicyTinyLFU, PolicyLRU} {
		tier := New(Options{Capacity: capacity, Policy: policy})
		got, held := runEpochs(t, tier, ids, epochs, data)
		s := tier.Stats()
		_ = tier.Close()
		if held != n/2 {
			t.Fatalf("%s: %d chunks held after epoch 1, want %d", policy, held, n/2)
		}
		ideal := float64(held) / n
		t.Logf("%-7s hit rate per epoch %.3f (capacity/N %.3f); %+v", policy, got, ideal, s)
		rates[policy] = got
		if policy == PolicyLRU && s.Declined != 0 {
			t.Errorf("lru declined %d Puts", s.Declined)
		}
		if policy == PolicyTinyLFU {
			for ep := 1; ep < epochs; ep++ {
				if got[ep] < 0.9*ideal {
					t.Errorf("tinylfu epoch %d: hit rate %.3f < 0.9 * %.3f", ep+1, got[ep], ideal)
				}
			}
		}
	}
	for ep := 1; ep < epochs; ep++ {
		if lru, lfu := rates[PolicyLRU][ep], rates[PolicyTinyLFU][ep]; lru >= 0.6*lfu {
			t.Errorf("epoch %d: lru hit rate %.3f not clearly below tinylfu's %.3f", ep+1, lru, lfu)
		}
	}
}

// fullTier returns a TinyLFU tier holding the first half of ids (read
// once, in order) after one pass of readThrough over all of them.
func fullTier(t *testing.T, ids []store.ChunkID, data []byte) *Tier {
	t.Helper()
	tier := New(Options{Capacity: int64(len(ids)/2) * charge(ids[0], data)})
	t.Cleanup(func() { _ = tier.Close() })
	for _, id := range ids {
		readThrough(t, tier, id, data)
	}
	if s := tier.Stats(); s.Chunks != int64(len(ids)/2) || s.Declined != int64(len(ids)/2) || s.Evictions != 0 {
		t.Fatalf("after one pass: %+v", s)
	}
	return tier
}

// held returns the indexes of the ids the tier holds, without counting
// an access (it looks at the shards, not through Get).
func held(tier *Tier, ids []store.ChunkID) []int {
	var in []int
	for i, id := range ids {
		s := tier.shardFor(id.Bucket, id.Key)
		s.mu.Lock()
		if s.entries[id] != nil {
			in = append(in, i)
		}
		s.mu.Unlock()
	}
	return in
}

// TestHotChunkAdmitted: admission is not a freeze. After a pass, a chunk
// read 5 times gets in over a cold victim; one read once more (a tie once
// its own miss is discounted) and a read-ahead Put do not.
func TestHotChunkAdmitted(t *testing.T) {
	ids := sameSizeIDs(200)
	data := make([]byte, 1000)
	tier := fullTier(t, ids, data)

	cold := ids[160] // read once more: 2 accesses, 1 before this miss
	if _, err := tier.Get(cold); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get(cold) = %v, want a miss", err)
	}
	if err := tier.Put(cold, data); !errors.Is(err, store.ErrNotAdmitted) {
		t.Fatalf("Put(cold) = %v, want ErrNotAdmitted", err)
	}
	if err := tier.Put(ids[170], data); !errors.Is(err, store.ErrNotAdmitted) {
		t.Fatalf("read-ahead Put = %v, want ErrNotAdmitted", err)
	}

	hot := ids[150]
	for range 5 {
		if _, err := tier.Get(hot); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Get(hot) = %v, want a miss", err)
		}
	}
	if err := tier.Put(hot, data); err != nil {
		t.Fatalf("Put(hot) = %v, want it admitted", err)
	}
	if _, err := tier.Get(hot); err != nil {
		t.Fatalf("Get(hot) after Put: %v", err)
	}
	s := tier.Stats()
	if s.Evictions != 1 || s.Chunks != 100 || s.Declined != 100+2 {
		t.Fatalf("Stats = %+v; want 1 eviction, 100 chunks, 102 declined", s)
	}
	// The victim was the least recently used: the first chunk of the pass.
	if got := held(tier, ids[:100]); len(got) != 99 || got[0] != 1 {
		t.Fatalf("held of the first 100: %d chunks starting at %v", len(got), got[:1])
	}
}

// TestMissDiscount: the Get that missed does not count for its own Put,
// once: the first Put after the miss ties with the victims (2 reads, 1
// before the miss, against 1) and is declined; a second Put, with no miss
// before it (as a read-ahead), competes with both reads and gets in.
func TestMissDiscount(t *testing.T) {
	ids := sameSizeIDs(20)
	data := make([]byte, 100)
	tier := fullTier(t, ids, data)
	x := ids[15]
	if _, err := tier.Get(x); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get(x) = %v, want a miss", err)
	}
	if err := tier.Put(x, data); !errors.Is(err, store.ErrNotAdmitted) {
		t.Fatalf("Put(x) after its miss = %v, want ErrNotAdmitted", err)
	}
	if err := tier.Put(x, data); err != nil {
		t.Fatalf("Put(x) again = %v, want it admitted", err)
	}
	if s := tier.Stats(); s.Evictions != 1 || s.Chunks != 10 {
		t.Fatalf("Stats = %+v", s)
	}
}

// TestEveryVictimMustLose: a chunk that needs two victims' room is
// declined while either is at least as popular, and admitted once it beats
// both; only those two are evicted.
func TestEveryVictimMustLose(t *testing.T) {
	ids := sameSizeIDs(4)
	small := make([]byte, 1000)
	per := charge(ids[0], small)
	big := make([]byte, 2*per-charge(ids[3], nil))
	tier := New(Options{Capacity: 3 * per})
	defer tier.Close()
	for i, reads := range []int{1, 5, 1} { // eviction order 0, 1, 2
		if err := tier.Put(ids[i], small); err != nil {
			t.Fatal(err)
		}
		for range reads {
			if _, err := tier.Get(ids[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	missTimes := func(n int) {
		t.Helper()
		for range n {
			if _, err := tier.Get(ids[3]); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("Get(big) = %v, want a miss", err)
			}
		}
	}
	missTimes(4) // 3 before this miss: beats chunk 0, not chunk 1
	if err := tier.Put(ids[3], big); !errors.Is(err, store.ErrNotAdmitted) {
		t.Fatalf("Put(big) with 3 earlier reads = %v, want ErrNotAdmitted", err)
	}
	missTimes(3) // 6 before this miss: beats both
	if err := tier.Put(ids[3], big); err != nil {
		t.Fatalf("Put(big) with 6 earlier reads = %v, want it admitted", err)
	}
	if got := held(tier, ids); !slices.Equal(got, []int{2, 3}) {
		t.Fatalf("held %v, want [2 3]", got)
	}
	if s := tier.Stats(); s.Evictions != 2 || s.Declined != 1 || s.UsedBytes != 3*per {
		t.Fatalf("Stats = %+v", s)
	}
}

// TestDeclineChangesNothing: ErrNotAdmitted leaves the same chunks and
// UsedBytes; PutAlways stores over a full tier; LRU never declines.
func TestDeclineChangesNothing(t *testing.T) {
	ids := sameSizeIDs(40)
	data := make([]byte, 500)
	tier := fullTier(t, ids, data)
	before, beforeHeld := tier.Stats(), held(tier, ids)
	for _, id := range ids[20:] {
		if err := tier.Put(id, data); !errors.Is(err, store.ErrNotAdmitted) {
			t.Fatalf("Put(%v) = %v, want ErrNotAdmitted", id, err)
		}
	}
	after := tier.Stats()
	if got := held(tier, ids); !slices.Equal(got, beforeHeld) || after.UsedBytes != before.UsedBytes ||
		after.Evictions != before.Evictions || after.Declined != before.Declined+20 {
		t.Fatalf("declines changed the tier: %+v -> %+v, held %v -> %v", before, after, beforeHeld, got)
	}
	if err := tier.PutAlways(ids[39], data); err != nil {
		t.Fatalf("PutAlways over a full tier: %v", err)
	}
	if _, err := tier.Get(ids[39]); err != nil {
		t.Fatalf("Get after PutAlways: %v", err)
	}
	if s := tier.Stats(); s.Evictions != 1 || s.Chunks != 20 || s.Declined != after.Declined {
		t.Fatalf("after PutAlways: %+v", s)
	}

	lru := New(Options{Capacity: 20 * charge(ids[0], data), Policy: PolicyLRU})
	defer lru.Close()
	for _, id := range ids {
		readThrough(t, lru, id, data)
	}
	if s := lru.Stats(); s.Declined != 0 || s.Evictions != 20 || s.Chunks != 20 {
		t.Fatalf("lru: %+v", s)
	}
}

// TestConcurrentAdmission: Gets, Puts, PutAlways and deletes from several
// goroutines on a small TinyLFU tier keep the budget and the bytes right
// (run under -race); Put fails with nothing but ErrNotAdmitted.
func TestConcurrentAdmission(t *testing.T) {
	ids := sameSizeIDs(64)
	capacity := 16 * charge(ids[0], []byte("0000")) // a quarter of the ids
	tier := New(Options{Capacity: capacity})
	defer tier.Close()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 9))
			for range 2000 {
				i := r.IntN(len(ids))
				data := []byte(fmt.Sprintf("%04d", i))
				var err error
				switch op := r.IntN(20); {
				case op < 12:
					var got []byte
					if got, err = tier.Get(ids[i]); err == nil && string(got) != string(data) {
						t.Errorf("Get(%d) = %q", i, got)
						return
					}
					if errors.Is(err, store.ErrNotFound) {
						err = tier.Put(ids[i], data)
					}
				case op < 19:
					err = tier.PutAlways(ids[i], data)
				default:
					err = tier.DeleteObject(ids[i].Bucket, ids[i].Key)
				}
				if err != nil && !errors.Is(err, store.ErrNotAdmitted) {
					t.Errorf("op on %d: %v", i, err)
					return
				}
				if u := tier.Stats().UsedBytes; u > capacity {
					t.Errorf("UsedBytes %d > capacity %d", u, capacity)
					return
				}
			}
		})
	}
	wg.Wait()
	if s := tier.Stats(); s.Declined == 0 || s.Evictions == 0 {
		t.Fatalf("Stats = %+v; want both declines and evictions", s)
	}
}

// TestParsePolicy: names, defaults and the error for an unknown one;
// New panics on an unknown name.
func TestParsePolicy(t *testing.T) {
	for in, want := range map[string]string{"": PolicyTinyLFU, "tinylfu": PolicyTinyLFU, " LRU ": PolicyLRU, "TinyLFU": PolicyTinyLFU} {
		if got, err := ParsePolicy(in); err != nil || got != want {
			t.Errorf("ParsePolicy(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParsePolicy("arc"); err == nil {
		t.Error(`ParsePolicy("arc") = nil error`)
	}
	defer func() {
		if recover() == nil {
			t.Error(`New with Policy "arc" did not panic`)
		}
	}()
	New(Options{Policy: "arc"})
}

// TestSketchSize: the sketch tracks capacity/64 KiB items within bounds.
func TestSketchSize(t *testing.T) {
	for capacity, want := range map[int64]int{0: minSketchItems, 64 << 20: minSketchItems, 1 << 30: 1 << 16, 64 << 30: maxSketchItems, 1 << 50: maxSketchItems} {
		if got := sketchItems(capacity); got != want {
			t.Errorf("sketchItems(%d) = %d, want %d", capacity, got, want)
		}
	}
}

// TestWouldAdmit: WouldAdmit says what the next Put would do, changing
// nothing: yes with room, no for a chunk no more frequent than its
// victims (twice, and the Put then declines it), yes once it is read
// more often than they were (and the Put admits it); an LRU tier admits
// all it can hold.
func TestWouldAdmit(t *testing.T) {
	ids := sameSizeIDs(40)
	data := make([]byte, 4<<10)
	roomy := New(Options{Capacity: 1 << 20})
	defer roomy.Close()
	if !roomy.WouldAdmit(ids[0], len(data)) || roomy.WouldAdmit(ids[0], 2<<20) {
		t.Fatal("a tier with room: WouldAdmit must admit what fits and only that")
	}
	tier := fullTier(t, ids, data)
	cold := ids[len(ids)-1] // read once, declined
	for range 2 {
		if tier.WouldAdmit(cold, len(data)) {
			t.Fatal("WouldAdmit(a chunk read no more often than the victims) = true")
		}
	}
	if err := tier.Put(cold, data); !errors.Is(err, store.ErrNotAdmitted) {
		t.Fatalf("Put after WouldAdmit said no = %v, want ErrNotAdmitted", err)
	}
	for range 3 {
		tier.Get(cold) //nolint:errcheck // a miss, counted
	}
	if !tier.WouldAdmit(cold, len(data)) {
		t.Fatal("WouldAdmit(a chunk read more often than the victims) = false")
	}
	if err := tier.Put(cold, data); err != nil {
		t.Fatalf("Put after WouldAdmit said yes = %v", err)
	}
	lru := New(Options{Capacity: 2 * charge(ids[0], data), Policy: PolicyLRU})
	defer lru.Close()
	for _, id := range ids[:3] {
		if !lru.WouldAdmit(id, len(data)) {
			t.Fatal("an LRU tier: WouldAdmit = false")
		}
		if err := lru.Put(id, data); err != nil {
			t.Fatalf("LRU Put: %v", err)
		}
	}
}
