// Admission policy of the RAM tier: a TinyLFU-style filter in front of
// eviction, so that a random-order epoch over more data than the tier holds
// keeps a fixed set of chunks cached instead of flushing it (Granary
// issue 6).
package ram

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/granary-dev/granary/internal/sketch"
	"github.com/granary-dev/granary/store"
)

// Policy names accepted in Options.Policy.
const (
	// PolicyTinyLFU (the default) admits a chunk into a full tier only if
	// it has been asked for more often lately than every chunk it would
	// evict; eviction order among held chunks stays LRU.
	PolicyTinyLFU = "tinylfu"
	// PolicyLRU admits everything and evicts the least recently used.
	PolicyLRU = "lru"
)

// ParsePolicy returns the canonical name of a policy as written in a
// configuration (case and surrounding blanks ignored; empty means
// PolicyTinyLFU), or an error naming the accepted values.
func ParsePolicy(s string) (string, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", PolicyTinyLFU:
		return PolicyTinyLFU, nil
	case PolicyLRU:
		return PolicyLRU, nil
	}
	return "", fmt.Errorf("ram: unknown cache policy %q (want %q or %q)", s, PolicyTinyLFU, PolicyLRU)
}

// Sizing of the frequency sketch. It tracks about capacity/sketchChunk
// items, clamped to [minSketchItems, maxSketchItems]: sketchChunk is a
// quarter of a typical small chunk, so the sketch tells apart the
// chunks of a data set several times the tier. The sketch keeps 4 rows
// of 1-byte counters, i.e. 4 bytes per tracked item, up to 8 once each
// stripe's width is rounded up to a power of two: 32 KiB at the floor,
// at most 8 bytes per 16 KiB of capacity (1/2048 of it) above it, and at
// most 32 MiB (4M items, reached by a 64 GiB tier). The miss marks add a
// fixed 32 KiB.
//
// The floor is 8192 rather than 1024: a sketch narrower than the number of
// distinct chunks in an epoch overcounts enough of them (collisions) to
// let some through, and each one let through evicts a chunk that is then
// missed. With 4000 distinct 4 KiB chunks over a tier of 2000 (whose
// capacity/64 KiB is only 131), a 1024-item floor held epochs 2-5 at
// 0.44-0.49 hits per access; 8192 holds them at 0.49-0.50 of the ideal 0.5.
const (
	sketchChunk    = 16 << 10
	minSketchItems = 8192
	maxSketchItems = 4 << 20

	// stripeBits selects a sketch stripe from the top bits of a chunk
	// hash. Striping by chunk (not by shard, which holds whole objects)
	// spreads the load evenly and keeps Gets on different stripes off
	// one sketch mutex.
	stripeBits  = 4
	freqStripes = 1 << stripeBits

	// missSlots is the number of miss marks (a power of 2); it bounds how
	// many outstanding misses are remembered without collisions.
	missSlots = 4096
)

// sketchItems is the number of items the sketch is sized for.
func sketchItems(capacity int64) int {
	return int(min(max(capacity/sketchChunk, minSketchItems), maxSketchItems))
}

// admission is the frequency side of PolicyTinyLFU. Its fields are set by
// newAdmission and never reassigned; the sketches lock themselves and the
// miss marks are atomic, so it needs no lock of its own.
//
// Counting invariant: every Get adds its chunk's hash once to the sketch,
// hit or miss. A miss also leaves a mark (the hash, in slot h%missSlots)
// after its addition. A Put that finds its chunk's mark clears it and
// compares Estimate-1, so the very access that caused the miss does not
// count in the candidate's favour; a Put without a mark (read-ahead, or a
// mark overwritten by a colliding miss) competes with the full estimate.
// A mark left by a miss that no Put followed costs a later Put of that
// chunk one count: errors of the marks favour the incumbents, never the
// candidate, except for overwritten marks (rare with missSlots well above
// the number of misses in flight).
//
// With exact counts this is what stops the cycling of random epochs: in
// epoch k an uncached chunk has been asked for k-1 times before its miss,
// and the LRU victim (a held chunk not yet read this epoch) also k-1
// times, so the tie keeps the victim and the held set stays fixed. Aging
// (the sketch halves every counter) keeps equal histories equal.
type admission struct {
	freq   [freqStripes]*sketch.Sketch
	missed [missSlots]atomic.Uint64
}

// newAdmission returns the admission state of a tier of capacity bytes.
func newAdmission(capacity int64) *admission {
	a := &admission{}
	per := sketchItems(capacity) / freqStripes
	for i := range a.freq {
		a.freq[i] = sketch.New(per)
	}
	return a
}

// stripe returns the sketch counting chunk hash h.
func (a *admission) stripe(h uint64) *sketch.Sketch { return a.freq[h>>(64-stripeBits)] }

// accessed counts one Get of the chunk with hash h; miss marks it for the
// Put that may follow (after the addition, so a Put that sees the mark
// also sees the count it discounts).
func (a *admission) accessed(h uint64, miss bool) {
	a.stripe(h).Add(h)
	if miss {
		a.missed[h&(missSlots-1)].Store(h)
	}
}

// takeMiss clears the mark of h and reports whether there was one.
func (a *admission) takeMiss(h uint64) bool {
	return a.missed[h&(missSlots-1)].CompareAndSwap(h, 0)
}

// missedNow reports whether h carries a miss mark, leaving it.
func (a *admission) missedNow(h uint64) bool { return a.missed[h&(missSlots-1)].Load() == h }

// WouldAdmit reports whether a Put of n bytes under id would pass the
// admission filter now: the tier has room for it, or it beats every chunk
// it would evict. It changes nothing a Put would see differently (the
// victims' walk sets pinned chunks aside, as a Put's does). A tier without
// a filter admits all it can hold.
func (t *Tier) WouldAdmit(id store.ChunkID, n int) bool {
	size := t.cost(id, n)
	if size > t.capacity || t.closed.Load() {
		return false
	}
	if t.adm == nil {
		return true
	}
	oh := t.objectHash(id.Bucket, id.Key)
	h := t.chunkHash(oh, id)
	t.mu.Lock()
	defer t.mu.Unlock()
	need := t.used.Load() + size - t.capacity
	if s := t.shared; s != nil {
		need = max(need, s.used.Load()+size-s.total)
	}
	if need <= 0 {
		return true
	}
	cand := t.candidate(h, t.adm.missedNow(h))
	return cand > 0 && t.beats(cand, t.victims(need, t.judgePins()))
}

// frequency estimates how often the chunk with hash h was asked for lately.
func (a *admission) frequency(h uint64) int { return a.stripe(h).Estimate(h) }

// victimInfo is what admission needs of a chunk a Put would evict.
type victimInfo struct {
	rank int64
	size int64
	hash uint64
}

// candidate returns the frequency a chunk with hash h competes with:
// its estimate, discounted by its own miss if missed. At 0 or below it
// loses to any victim (no frequency is below 0).
func (t *Tier) candidate(h uint64, missed bool) int {
	cand := t.adm.frequency(h)
	if missed {
		cand--
	}
	return cand
}

// beats reports whether a chunk of frequency cand beats every chunk of vs
// (the victims that would be evicted to make room for it): cand must be
// strictly greater than each one's frequency. Ties keep the incumbent.
// Pinned chunks are never among the victims, so never compared.
func (t *Tier) beats(cand int, vs []victimInfo) bool {
	for _, v := range vs {
		if t.adm.frequency(v.hash) >= cand {
			return false
		}
	}
	return true
}

// victims returns the chunks the global eviction order would evict, first
// to last, to free need bytes (fewer if every other chunk is pinned):
// the merge by rank of every shard's first evictable victims. The pinned
// chunks met on the way are set aside (gen as for shard.victim). The
// merged prefix never takes more than need bytes from one shard, so each
// shard's walk stops once it has gathered that much. The result is a snapshot: a concurrent Get may
// reorder a shard before the evictions, which then take the shard's
// current victims (as evictOne always did). The slice is t.scratch, valid
// until the next call. Caller holds t.mu.
func (t *Tier) victims(need int64, gen uint64) []victimInfo {
	vs := t.scratch[:0]
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		s.walkEvictable(t, gen, need, func(e *entry, rank int64) {
			vs = append(vs, victimInfo{rank: rank, size: e.size, hash: e.hash})
		})
		s.mu.Unlock()
	}
	slices.SortFunc(vs, func(a, b victimInfo) int { return cmp.Compare(a.rank, b.rank) })
	t.scratch = vs
	var freed int64
	for i, v := range vs {
		if freed >= need {
			return vs[:i]
		}
		freed += v.size
	}
	return vs
}
