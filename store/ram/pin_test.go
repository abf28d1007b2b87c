// Tests of pinning in the RAM tier: pinned chunks survive any pressure
// under both policies and both Puts, unpinning and late pinning take
// effect at the next eviction, a tier full of pinned chunks refuses with
// ErrPinnedFull and changes nothing, DeleteObject still removes pinned
// objects, and all of it holds under concurrency.
package ram

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"

	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/storetest"
)

// pinIDs returns n one-chunk IDs named prefix-NNNNNN in bucket "b";
// prefixes of equal length give chunks of equal charge.
func pinIDs(prefix string, n int) []store.ChunkID {
	ids := make([]store.ChunkID, n)
	for i := range ids {
		ids[i] = store.ChunkID{Bucket: "b", Key: fmt.Sprintf("%s-%06d", prefix, i), ETag: "e1"}
	}
	return ids
}

// pinData is the 256 bytes stored under id, distinct per id.
func pinData(id store.ChunkID) []byte {
	return []byte(fmt.Sprintf("%-256s", fmt.Sprintf("%s/%s#%d", id.Bucket, id.Key, id.Index)))
}

// chunkCost is the charge of one chunk of pinIDs with pinData.
var chunkCost = charge(pinIDs("pin", 1)[0], pinData(pinIDs("pin", 1)[0]))

// putter is Put or PutAlways.
type putter struct {
	name string
	put  func(*Tier, store.ChunkID, []byte) error
}

var putters = []putter{
	{"Put", (*Tier).Put},
	{"PutAlways", (*Tier).PutAlways},
}

// mustPut stores every id with PutAlways.
func mustPut(t *testing.T, tier *Tier, ids []store.ChunkID) {
	t.Helper()
	for _, id := range ids {
		if err := tier.PutAlways(id, pinData(id)); err != nil {
			t.Fatalf("PutAlways(%v): %v", id, err)
		}
	}
}

// pressure puts every id with put; a filtered Put may be declined. It
// checks the budget after each one.
func pressure(t *testing.T, tier *Tier, p putter, ids []store.ChunkID) {
	t.Helper()
	for _, id := range ids {
		// Two misses first, so a filtered Put has a frequency to compete with.
		_, _ = tier.Get(id)
		_, _ = tier.Get(id)
		if err := p.put(tier, id, pinData(id)); err != nil && !errors.Is(err, store.ErrNotAdmitted) {
			t.Fatalf("%s(%v): %v", p.name, id, err)
		}
		if s := tier.Stats(); s.UsedBytes > s.CapacityBytes {
			t.Fatalf("UsedBytes %d > capacity %d", s.UsedBytes, s.CapacityBytes)
		}
	}
}

// present returns how many of ids the tier holds, failing on a wrong byte.
func present(t *testing.T, tier *Tier, ids []store.ChunkID) int {
	t.Helper()
	n := 0
	for _, id := range ids {
		got, err := tier.Get(id)
		switch {
		case err == nil && !bytes.Equal(got, pinData(id)):
			t.Fatalf("Get(%v) = %q", id, got)
		case err == nil:
			n++
		case !errors.Is(err, store.ErrNotFound):
			t.Fatalf("Get(%v): %v", id, err)
		}
	}
	return n
}

// checkTier verifies the tier's bookkeeping: every entry is in exactly
// one of its shard's policy and aside list, flagged accordingly, and the
// charges add up to UsedBytes. It returns the number of aside entries.
func checkTier(t *testing.T, tier *Tier) int {
	t.Helper()
	tier.mu.Lock()
	defer tier.mu.Unlock()
	var used int64
	var chunks, aside int
	for i := range tier.shards {
		s := &tier.shards[i]
		s.mu.Lock()
		ring := func(l *lru, flag bool) int {
			n := 0
			for e := l.root.next; e != &l.root; e = e.next {
				if e.aside != flag || s.entries[e.id] != e {
					t.Errorf("shard %d: entry %v aside=%v in the wrong list", i, e.id, e.aside)
				}
				n++
			}
			return n
		}
		inPolicy, inAside := ring(s.policy.(*lru), false), ring(s.aside, true)
		if inPolicy+inAside != len(s.entries) {
			t.Errorf("shard %d: %d in policy + %d aside != %d entries", i, inPolicy, inAside, len(s.entries))
		}
		for _, e := range s.entries {
			used += e.size
		}
		chunks += len(s.entries)
		aside += inAside
		s.mu.Unlock()
	}
	if st := tier.Stats(); st.UsedBytes != used || st.Chunks != int64(chunks) {
		t.Errorf("Stats %+v; entries charge %d in %d chunks", st, used, chunks)
	}
	return aside
}

// TestPinnedSurvivePressure: a tier of 20 chunks, 8 of them pinned and
// oldest, takes 200 unpinned chunks under each policy and Put: the pinned
// ones stay, byte-exact, set aside, without Get asking the PinSet. Then
// unpinning them lets further pressure evict them.
func TestPinnedSurvivePressure(t *testing.T) {
	for _, policy := range []string{PolicyLRU, PolicyTinyLFU} {
		for _, p := range putters {
			t.Run(policy+"/"+p.name, func(t *testing.T) {
				pins := storetest.NewPins("b/pin-")
				tier := New(Options{Capacity: 20 * chunkCost, Policy: policy, Pins: pins})
				defer tier.Close()
				pinned, filler, more := pinIDs("pin", 8), pinIDs("fil", 12), pinIDs("mor", 200)
				mustPut(t, tier, pinned)
				mustPut(t, tier, filler)
				pressure(t, tier, p, more)
				if s := tier.Stats(); s.Evictions < 12 || s.Chunks != 20 {
					t.Fatalf("after pressure: %+v; want >= 12 evictions and 20 chunks", s)
				}
				calls := pins.Calls()
				if n := present(t, tier, pinned); n != len(pinned) {
					t.Fatalf("%d of %d pinned chunks left", n, len(pinned))
				}
				if got := pins.Calls(); got != calls {
					t.Fatalf("Gets called Pinned %d times", got-calls)
				}
				if n := checkTier(t, tier); n != len(pinned) {
					t.Fatalf("%d chunks aside, want %d", n, len(pinned))
				}

				pins.Set("b/pin-", false)
				mustPut(t, tier, pinIDs("end", 40))
				if n := present(t, tier, pinned); n != 0 {
					t.Fatalf("%d unpinned chunks survived 40 PutAlways", n)
				}
				if n := checkTier(t, tier); n != 0 {
					t.Fatalf("%d chunks still aside after unpinning", n)
				}
			})
		}
	}
}

// TestAdmissionSkipsPinned: TinyLFU compares a candidate with the
// evictable victims only: frequent pinned chunks at the eviction end do
// not keep out a chunk that beats the unpinned ones behind them.
func TestAdmissionSkipsPinned(t *testing.T) {
	pins := storetest.NewPins("b/pin-")
	tier := New(Options{Capacity: 10 * chunkCost, Policy: PolicyTinyLFU, Pins: pins})
	defer tier.Close()
	pinned, filler := pinIDs("pin", 5), pinIDs("fil", 5)
	mustPut(t, tier, pinned)
	for range 5 {
		if present(t, tier, pinned) != 5 {
			t.Fatal("pinned chunks missing")
		}
	}
	mustPut(t, tier, filler) // most recent, never read: frequency 0
	id := pinIDs("new", 1)[0]
	_, _ = tier.Get(id)
	_, _ = tier.Get(id) // frequency 2, 1 after its miss discount
	if err := tier.Put(id, pinData(id)); err != nil {
		t.Fatalf("Put = %v; want admitted over the unpinned chunks", err)
	}
	if present(t, tier, pinned) != 5 || present(t, tier, filler) != 4 {
		t.Fatal("admission evicted the wrong chunk")
	}
}

// TestPinAfterCached: chunks cached (and already judged evictable) before
// their objects were pinned are protected from the generation change on.
func TestPinAfterCached(t *testing.T) {
	for _, policy := range []string{PolicyLRU, PolicyTinyLFU} {
		t.Run(policy, func(t *testing.T) {
			pins := storetest.NewPins()
			tier := New(Options{Capacity: 20 * chunkCost, Policy: policy, Pins: pins})
			defer tier.Close()
			early := pinIDs("aaa", 20)
			mustPut(t, tier, early)
			mustPut(t, tier, pinIDs("one", 1)) // evicts early[0], judging other heads evictable
			if n := present(t, tier, early[1:]); n != 19 {
				t.Fatalf("%d of 19 early chunks held", n)
			}
			pins.Set("b/aaa-", true)
			mustPut(t, tier, pinIDs("bbb", 100))
			if n := present(t, tier, early[1:]); n != 19 {
				t.Fatalf("%d of 19 pinned chunks left", n)
			}
			if s := tier.Stats(); s.Chunks != 20 || s.Evictions != 101 {
				t.Fatalf("Stats = %+v; want 20 chunks, 101 evictions", s)
			}
			checkTier(t, tier)
		})
	}
}

// TestPinnedFull: when the chunks a Put could evict are all pinned, or
// free too little, Put and PutAlways fail with ErrPinnedFull and the tier
// is unchanged; a chunk that fits without evicting still goes in.
func TestPinnedFull(t *testing.T) {
	for _, policy := range []string{PolicyLRU, PolicyTinyLFU} {
		for _, p := range putters {
			t.Run(policy+"/"+p.name, func(t *testing.T) {
				pins := storetest.NewPins("b/pin-")
				tier := New(Options{Capacity: 10 * chunkCost, Policy: policy, Pins: pins})
				defer tier.Close()
				pinned, loose := pinIDs("pin", 9), pinIDs("fil", 1)
				mustPut(t, tier, pinned)
				mustPut(t, tier, loose)
				before := tier.Stats()

				// Needs two chunks' room; only one is evictable.
				big := store.ChunkID{Bucket: "b", Key: "big-000000", ETag: "e1"}
				bigData := bytes.Repeat([]byte("x"), int(chunkCost)+1)
				for range 3 {
					_, _ = tier.Get(big) // a frequency that would beat the loose chunk
				}
				if err := p.put(tier, big, bigData); !errors.Is(err, store.ErrPinnedFull) {
					t.Fatalf("%s(big) = %v, want ErrPinnedFull", p.name, err)
				}
				if after := tier.Stats(); after != before {
					t.Fatalf("failed Put changed the tier: %+v -> %+v", before, after)
				}
				if present(t, tier, pinned) != 9 || present(t, tier, loose) != 1 {
					t.Fatal("failed Put evicted a chunk")
				}

				// Evict the loose chunk (PutAlways), then any Put is refused.
				mustPut(t, tier, pinIDs("pin", 10)[9:])
				full := tier.Stats()
				if full.Chunks != 10 || full.Evictions != 1 || present(t, tier, loose) != 0 {
					t.Fatalf("after filling with pins: %+v", full)
				}
				for _, id := range pinIDs("new", 3) {
					if err := p.put(tier, id, pinData(id)); !errors.Is(err, store.ErrPinnedFull) {
						t.Fatalf("%s(%v) = %v, want ErrPinnedFull", p.name, id, err)
					}
				}
				if after := tier.Stats(); after != full {
					t.Fatalf("refused Puts changed the tier: %+v -> %+v", full, after)
				}
				if n := present(t, tier, pinIDs("pin", 10)); n != 10 {
					t.Fatalf("%d of 10 pinned chunks left", n)
				}
				checkTier(t, tier)
			})
		}
	}
}

// TestDeletePinned: DeleteObject removes a pinned object's chunks,
// whether set aside or not, and the tier works on.
func TestDeletePinned(t *testing.T) {
	pins := storetest.NewPins("b/pin-")
	tier := New(Options{Capacity: 10 * chunkCost, Policy: PolicyLRU, Pins: pins})
	defer tier.Close()
	obj := pinIDs("pin", 1)[0]
	chunks := []store.ChunkID{obj, obj, obj}
	chunks[1].Index, chunks[2].Index = 1, 2
	mustPut(t, tier, chunks[:2])
	mustPut(t, tier, pinIDs("fil", 8))
	mustPut(t, tier, pinIDs("mor", 4)) // sets chunks 0 and 1 aside
	mustPut(t, tier, chunks[2:])       // a third chunk, still in the policy
	if n := checkTier(t, tier); n != 2 {
		t.Fatalf("%d chunks aside, want 2", n)
	}
	before := tier.Stats()
	if held := tier.Held(obj.Bucket, obj.Key, obj.ETag); held != 3*256 {
		t.Fatalf("Held = %d, want %d", held, 3*256)
	}
	if err := tier.DeleteObject(obj.Bucket, obj.Key); err != nil {
		t.Fatal(err)
	}
	if n := present(t, tier, chunks); n != 0 {
		t.Fatalf("%d chunks of the deleted object left", n)
	}
	if vs := tier.Versions(obj.Bucket, obj.Key); len(vs) != 0 {
		t.Fatalf("Versions after delete = %v", vs)
	}
	after := tier.Stats()
	if after.Chunks != before.Chunks-3 || after.UsedBytes != before.UsedBytes-3*chunkCost {
		t.Fatalf("delete: %+v -> %+v", before, after)
	}
	if n := checkTier(t, tier); n != 0 {
		t.Fatalf("%d chunks aside after delete", n)
	}
	mustPut(t, tier, pinIDs("end", 20))
	checkTier(t, tier)
}

// TestConcurrentPins: Gets, Puts, PutAlways, deletes and pin changes from
// several goroutines (run under -race) keep the budget and the bytes, fail
// only with ErrNotAdmitted or ErrPinnedFull, and never evict the chunks
// of a prefix pinned throughout.
func TestConcurrentPins(t *testing.T) {
	pins := storetest.NewPins("b/kee-", "b/fl0-")
	keep, flips := pinIDs("kee", 4), [][]store.ChunkID{pinIDs("fl0", 16), pinIDs("fl1", 16)}
	loose := pinIDs("lo0", 32)
	var all []store.ChunkID
	all = append(append(append(all, flips[0]...), flips[1]...), loose...)
	for _, policy := range []string{PolicyLRU, PolicyTinyLFU} {
		t.Run(policy, func(t *testing.T) {
			tier := New(Options{Capacity: 16 * chunkCost, Policy: policy, Pins: pins})
			defer tier.Close()
			mustPut(t, tier, keep)
			var wg sync.WaitGroup
			stop := make(chan struct{})
			wg.Go(func() {
				for i := range 100000 {
					select {
					case <-stop:
						return
					default:
					}
					pins.Set(fmt.Sprintf("b/fl%d-", i%2), i%4 < 2)
					runtime.Gosched()
				}
			})
			var workers sync.WaitGroup
			for g := range 4 {
				workers.Go(func() { pinWorker(t, tier, all, uint64(g)) })
			}
			workers.Wait()
			close(stop)
			wg.Wait()
			if n := present(t, tier, keep); n != len(keep) {
				t.Fatalf("%d of %d always-pinned chunks left", n, len(keep))
			}
			checkTier(t, tier)
		})
	}
}

// pinWorker runs 2000 random operations on ids for TestConcurrentPins.
func pinWorker(t *testing.T, tier *Tier, ids []store.ChunkID, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 7))
	for range 2000 {
		id := ids[r.IntN(len(ids))]
		var err error
		switch op := r.IntN(20); {
		case op < 10:
			var got []byte
			if got, err = tier.Get(id); err == nil && !bytes.Equal(got, pinData(id)) {
				t.Errorf("Get(%v) = %q", id, got)
				return
			}
			if errors.Is(err, store.ErrNotFound) {
				err = tier.Put(id, pinData(id))
			}
		case op < 19:
			err = tier.PutAlways(id, pinData(id))
		default:
			err = tier.DeleteObject(id.Bucket, id.Key)
		}
		if err != nil && !errors.Is(err, store.ErrNotAdmitted) && !errors.Is(err, store.ErrPinnedFull) {
			t.Errorf("op on %v: %v", id, err)
			return
		}
		if s := tier.Stats(); s.UsedBytes > s.CapacityBytes {
			t.Errorf("UsedBytes %d > capacity %d", s.UsedBytes, s.CapacityBytes)
			return
		}
	}
}

// BenchmarkPutSmallPins: BenchmarkPutSmall with a PinSet, pinning nothing
// or a quarter of the tier (held from the start, set aside once).
func BenchmarkPutSmallPins(b *testing.B) {
	const n = 1 << 16
	ids := benchIDs(n)
	data := make([]byte, 4<<10)
	for _, frac := range []int{0, 4} {
		b.Run(map[int]string{0: "none", 4: "quarter"}[frac], func(b *testing.B) {
			pins := storetest.NewPins()
			if frac > 0 {
				pins.Set("train/pinned-", true)
			}
			capacity := int64(n/4) * charge(ids[0], data)
			tier := New(Options{Capacity: capacity, Pins: pins})
			defer tier.Close()
			if frac > 0 {
				for i := range n / 4 / frac {
					id := store.ChunkID{Bucket: "train", Key: fmt.Sprintf("pinned-%05d/img-%07d.jpg", i, i), ETag: ids[0].ETag}
					if err := tier.PutAlways(id, data); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.SetBytes(int64(len(data)))
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if err := tier.PutAlways(ids[i&(n-1)], data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
