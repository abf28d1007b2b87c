// Tests of pinning: pinned chunks survive pressure under both policies,
// unpinning and late pinning take effect, a tier full of pinned chunks
// refuses Puts with ErrPinnedFull and changes nothing, deletes still
// work, admission skips pinned units, and all of it under -race.
package disk

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/storetest"
)

func pinOptions(dir, policy string, pins store.PinSet) Options {
	return Options{Dir: dir, Capacity: 512 << 10, SegmentSize: 64 << 10, SmallMax: 16 << 10,
		LowWater: 0.8, Policy: policy, Pins: pins}
}

// presser puts fresh unpinned chunks of 8 KiB. With Put under
// PolicyTinyLFU each chunk is first missed more often than the ones
// before it (1 + i/24 times), so newer chunks win admission until the
// sketch saturates (i about 340).
type presser struct {
	tier   *Tier
	always bool
	i      int
}

func (p *presser) press(t *testing.T, n int) {
	t.Helper()
	for range n {
		id, data := chunk(fmt.Sprintf("press/%d", p.i), 0, 8<<10)
		var err error
		if p.always {
			err = p.tier.PutAlways(id, data)
		} else {
			if p.tier.adm != nil {
				getN(t, p.tier, id, 1+p.i/24)
			}
			err = p.tier.Put(id, data)
		}
		if err != nil && !(errors.Is(err, store.ErrNotAdmitted) && !p.always && p.tier.adm != nil) {
			t.Fatalf("put %d: %v", p.i, err)
		}
		checkBudget(t, p.tier)
		p.i++
	}
}

func checkBudget(t *testing.T, tier *Tier) {
	t.Helper()
	if s := tier.Stats(); s.UsedBytes > s.CapacityBytes {
		t.Fatalf("budget exceeded: %d > %d", s.UsedBytes, s.CapacityBytes)
	}
}

type testChunk struct {
	id   store.ChunkID
	data []byte
}

// putObject stores n chunks of key (the last one large if large).
func putObject(t *testing.T, tier *Tier, key string, n int, large bool) []testChunk {
	t.Helper()
	var cs []testChunk
	for i := range n {
		size := 8 << 10
		if large && i == n-1 {
			size = 24 << 10
		}
		id, data := chunk(key, i, size)
		if err := tier.PutAlways(id, data); err != nil {
			t.Fatalf("PutAlways(%+v): %v", id, err)
		}
		cs = append(cs, testChunk{id, data})
	}
	return cs
}

func allThere(t *testing.T, tier *Tier, cs []testChunk) {
	t.Helper()
	for _, c := range cs {
		mustGet(t, tier, c.id, c.data)
	}
}

func allGone(t *testing.T, tier *Tier, cs []testChunk) {
	t.Helper()
	for _, c := range cs {
		mustMiss(t, tier, c.id)
	}
}

func forEachMode(t *testing.T, fn func(t *testing.T, policy string, always bool)) {
	for _, policy := range []string{PolicyLRU, PolicyTinyLFU} {
		for _, always := range []bool{false, true} {
			name := policy + "/put"
			if always {
				name = policy + "/putalways"
			}
			t.Run(name, func(t *testing.T) { fn(t, policy, always) })
		}
	}
}

// TestPinnedSurvivePressure: pinned chunks (small and large, put between
// unpinned ones) outlive four times the capacity of pressure, byte-exact,
// within the budget; the unpinned chunks put between them do not (pinned
// chunks have segments of their own). Unpinning then lets pressure (with
// PutAlways: under PolicyTinyLFU the pressure would soon be declined)
// evict them. Get never asks the PinSet.
func TestPinnedSurvivePressure(t *testing.T) {
	forEachMode(t, func(t *testing.T, policy string, always bool) {
		pins := storetest.NewPins("b/pinned/")
		tier := openFixed(t, pinOptions(t.TempDir(), policy, pins))
		var pinned, loose []testChunk
		for j := range 3 {
			pinned = append(pinned, putObject(t, tier, fmt.Sprintf("pinned/o%d", j), 5, j == 0)...)
			loose = append(loose, putObject(t, tier, fmt.Sprintf("loose/o%d", j), 4, j == 1)...)
		}
		p := &presser{tier: tier, always: always}
		before := tier.Stats().Evictions
		p.press(t, 250)
		if tier.Stats().Evictions == before {
			t.Fatal("pressure evicted nothing")
		}
		calls := pins.Calls()
		allThere(t, tier, pinned)
		if got := pins.Calls(); got != calls {
			t.Fatalf("Get asked the PinSet %d times", got-calls)
		}
		allGone(t, tier, loose)

		pins.Set("b/pinned/", false)
		p.always = true
		p.press(t, 250)
		allGone(t, tier, pinned)
	})
}

// TestPinAfterPut: objects pinned after they were cached (the Generation
// moves) are protected from then on.
func TestPinAfterPut(t *testing.T) {
	forEachMode(t, func(t *testing.T, policy string, always bool) {
		pins := storetest.NewPins()
		tier := openFixed(t, pinOptions(t.TempDir(), policy, pins))
		p := &presser{tier: tier, always: always}
		p.press(t, 20)
		late := putObject(t, tier, "late/o", 6, true)
		// A first eviction judges units before the pin: the verdicts it
		// caches must not outlive the Generation.
		for tier.Stats().Evictions == 0 {
			if p.i > 100 {
				t.Fatal("no eviction")
			}
			p.press(t, 1)
		}
		allThere(t, tier, late)
		pins.Set("b/late/", true)
		p.press(t, 200)
		allThere(t, tier, late)
	})
}

// tierSnapshot is what a refused Put must leave as it was.
type tierSnapshot struct {
	stats store.TierStats
	files int64
}

func snapshot(t *testing.T, tier *Tier, dir string) tierSnapshot {
	t.Helper()
	return tierSnapshot{tier.Stats(), diskUsage(t, dir)}
}

// fillPinned fills the tier with 8 pinned objects of one segment each
// (8 chunks of 8 KiB), "full/o<j>/x" under prefix "b/full/o<j>/".
func fillPinned(t *testing.T, tier *Tier, pins *storetest.Pins) [][]testChunk {
	t.Helper()
	var objs [][]testChunk
	for j := range 8 {
		pins.Set(fmt.Sprintf("b/full/o%d/", j), true)
		objs = append(objs, putObject(t, tier, fmt.Sprintf("full/o%d/x", j), 8, false))
	}
	if s := tier.Stats(); s.UsedBytes != s.CapacityBytes || s.Evictions != 0 {
		t.Fatalf("filled tier: %+v", s)
	}
	return objs
}

// TestPinnedFull: in a tier full of pinned chunks, Put and PutAlways of
// small and large chunks fail with ErrPinnedFull and change nothing;
// unpinning one object makes room again.
func TestPinnedFull(t *testing.T) {
	for _, policy := range []string{PolicyLRU, PolicyTinyLFU} {
		t.Run(policy, func(t *testing.T) {
			dir := t.TempDir()
			pins := storetest.NewPins()
			tier := openFixed(t, pinOptions(dir, policy, pins))
			objs := fillPinned(t, tier, pins)
			want := snapshot(t, tier, dir)
			for _, size := range []int{8 << 10, 24 << 10} {
				id, data := chunk("new", size, size)
				getN(t, tier, id, 5)
				if err := tier.Put(id, data); !errors.Is(err, store.ErrPinnedFull) {
					t.Fatalf("Put of %d bytes: %v, want ErrPinnedFull", size, err)
				}
				if err := tier.PutAlways(id, data); !errors.Is(err, store.ErrPinnedFull) {
					t.Fatalf("PutAlways of %d bytes: %v, want ErrPinnedFull", size, err)
				}
				if got := snapshot(t, tier, dir); got != want {
					t.Fatalf("refused Put changed the tier: %+v, want %+v", got, want)
				}
				mustMiss(t, tier, id)
			}
			for _, cs := range objs {
				allThere(t, tier, cs)
			}
			pins.Set("b/full/o5/", false)
			id, data := chunk("new", 0, 24<<10)
			if err := tier.PutAlways(id, data); err != nil {
				t.Fatalf("PutAlways after unpinning: %v", err)
			}
			mustGet(t, tier, id, data)
			allGone(t, tier, objs[5])
			for j, cs := range objs {
				if j != 5 {
					allThere(t, tier, cs)
				}
			}
			checkBudget(t, tier)
		})
	}
}

// TestDeletePinned: DeleteObject drops a pinned object's chunks (a chunk
// file at once), and the room it leaves in a pinned segment is evicted.
func TestDeletePinned(t *testing.T) {
	dir := t.TempDir()
	pins := storetest.NewPins()
	tier := openFixed(t, pinOptions(dir, PolicyLRU, pins))
	objs := fillPinned(t, tier, pins)
	if err := tier.DeleteObject("b", "full/o2/x"); err != nil {
		t.Fatal(err)
	}
	allGone(t, tier, objs[2])
	if vs := tier.Versions("b", "full/o2/x"); len(vs) != 0 {
		t.Fatalf("versions after delete: %q", vs)
	}
	// The segment still takes its room (dead space) until evicted, which
	// needs it judged again: a Put must succeed.
	id, data := chunk("new", 0, 8<<10)
	if err := tier.PutAlways(id, data); err != nil {
		t.Fatalf("PutAlways after deleting a pinned object: %v", err)
	}
	mustGet(t, tier, id, data)

	pins.Set("b/big/", true)
	pins.Set("b/full/o4/", false)
	big := putObject(t, tier, "big/x", 1, true)
	before := diskUsage(t, dir)
	if err := tier.DeleteObject("b", "big/x"); err != nil {
		t.Fatal(err)
	}
	allGone(t, tier, big)
	if got := diskUsage(t, dir); got != before-int64(len(big[0].data)) {
		t.Fatalf("disk usage after deleting a pinned chunk file: %d, want %d", got, before-int64(len(big[0].data)))
	}
}

// TestAdmissionSkipsPinned: the admission check compares a candidate with
// the first evictable unit, not with a popular pinned one at the back of
// the LRU list; the Put then evicts the evictable unit.
func TestAdmissionSkipsPinned(t *testing.T) {
	pins := storetest.NewPins("b/hot/")
	tier := openFixed(t, pinOptions(t.TempDir(), PolicyTinyLFU, pins))
	hot := putObject(t, tier, "hot/x", 8, false)
	for range 10 {
		allThere(t, tier, hot)
	}
	var cold []testChunk
	for i := 0; tier.Stats().UsedBytes+8<<10 <= tier.highWater(); i++ {
		id, data := chunk(fmt.Sprintf("cold/%d", i), 0, 8<<10)
		mustPut(t, tier, id, data)
		cold = append(cold, testChunk{id, data})
	}
	id, data := chunk("candidate", 0, 8<<10)
	getN(t, tier, id, 3) // 2 before its miss: a whole access more than the cold units' 0
	if err := tier.Put(id, data); err != nil {
		t.Fatalf("Put of a chunk more popular than the evictable units: %v", err)
	}
	mustGet(t, tier, id, data)
	allThere(t, tier, hot)
	allGone(t, tier, cold[:8])
	if s := tier.Stats(); s.Declined != 0 || s.Evictions == 0 {
		t.Fatalf("stats: %+v", s)
	}
}

// TestPinRestart: after a restart, units come back unjudged and pinned
// ones are still never evicted.
func TestPinRestart(t *testing.T) {
	dir := t.TempDir()
	pins := storetest.NewPins("b/pinned/")
	tier, err := Open(pinOptions(dir, PolicyLRU, pins))
	if err != nil {
		t.Fatal(err)
	}
	pinned := putObject(t, tier, "pinned/x", 6, true)
	if err := tier.Close(); err != nil {
		t.Fatal(err)
	}
	tier = openT(t, pinOptions(dir, PolicyLRU, pins))
	(&presser{tier: tier}).press(t, 200)
	allThere(t, tier, pinned)
}

// TestPinConcurrent: Gets, Puts and pin changes from several goroutines.
// Chunks pinned throughout survive byte-exact; the budget always holds;
// Puts fail only as documented.
func TestPinConcurrent(t *testing.T) {
	for _, policy := range []string{PolicyLRU, PolicyTinyLFU} {
		t.Run(policy, func(t *testing.T) {
			pins := storetest.NewPins("b/keep/", "b/flip/")
			tier := openFixed(t, pinOptions(t.TempDir(), policy, pins))
			keep := putObject(t, tier, "keep/x", 6, true)
			var wg sync.WaitGroup
			errs := make(chan error, 8)
			for g := range 3 {
				wg.Go(func() { errs <- concurrentWriter(tier, g) })
			}
			wg.Go(func() {
				for i := range 200 {
					pins.Set("b/flip/", i%2 == 1)
				}
			})
			wg.Go(func() {
				for range 100 {
					for _, c := range keep {
						if got, err := tier.Get(c.id); err != nil || string(got) != string(c.data) {
							errs <- fmt.Errorf("pinned chunk %+v: %v", c.id, err)
							return
						}
					}
				}
				errs <- nil
			})
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			allThere(t, tier, keep)
			checkBudget(t, tier)
		})
	}
}

// concurrentWriter puts and reads back chunks of flipping and unpinned
// objects.
func concurrentWriter(tier *Tier, g int) error {
	for i := range 150 {
		key := fmt.Sprintf("w%d/%d", g, i)
		if i%3 == 0 {
			key = fmt.Sprintf("flip/%d/%d", g, i)
		}
		size := 8 << 10
		if i%10 == 0 {
			size = 20 << 10
		}
		id, data := chunk(key, 0, size)
		put := tier.Put
		if i%2 == 0 {
			put = tier.PutAlways
		}
		err := put(id, data)
		if err != nil && !errors.Is(err, store.ErrNotAdmitted) && !errors.Is(err, store.ErrPinnedFull) {
			return fmt.Errorf("put %+v: %w", id, err)
		}
		if got, err := tier.Get(id); err == nil && string(got) != string(data) {
			return fmt.Errorf("get %+v: wrong bytes", id)
		}
		if s := tier.Stats(); s.UsedBytes > s.CapacityBytes {
			return fmt.Errorf("budget exceeded: %+v", s)
		}
	}
	return nil
}
