// Admission policy of the disk tier: TinyLFU-style, against whole units.
package disk

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"io"
	"sync/atomic"

	"github.com/granary-dev/granary/internal/sketch"
	"github.com/granary-dev/granary/store"
)

// Admission policies (Options.Policy).
const (
	// PolicyTinyLFU declines a Put into a full tier (see admitsLocked) unless
	// the chunk has been asked for more often lately than the chunks of
	// the unit that would be evicted first. It keeps a random-order epoch
	// over more data than the tier holds from flushing it.
	PolicyTinyLFU = "tinylfu"
	// PolicyLRU admits every chunk and evicts the least recently used
	// units.
	PolicyLRU = "lru"
)

const (
	// sketchChunk sizes the sketch by default: a quarter of a typical
	// small chunk, so that it tells apart the chunks of a data set
	// several times the tier (4 bytes per item: at most 1/4096 of the
	// capacity, and 16 MiB).
	sketchChunk = 16 << 10
	// minSketchItems and maxSketchItems bound the sketch's size.
	minSketchItems = 8192
	maxSketchItems = 4 << 20
	// maxFreq mirrors the sketch's saturation: a chunk's frequency is
	// never counted above it, on either side of a comparison.
	maxFreq = 15
)

// checkPolicy validates a policy name; "" means PolicyTinyLFU.
func checkPolicy(p string) (string, error) {
	switch p {
	case "":
		return PolicyTinyLFU, nil
	case PolicyTinyLFU, PolicyLRU:
		return p, nil
	}
	return p, fmt.Errorf("disk: unknown admission policy %q (want %q or %q)", p, PolicyTinyLFU, PolicyLRU)
}

// admission is the frequency side of PolicyTinyLFU: a count-min sketch of
// recent Gets (hits and misses) per chunk.
//
// The unit side: a unit keeps, guarded by Tier.mu, chunks (live chunks
// written to it) and freq, the sum over them of their access counts in
// the sketch's terms: each chunk adds its sketch estimate when written
// (which counts the Get that missed it, and any earlier misses it was
// declined at), and every Get hit in the unit adds one. So freq/chunks is
// the mean estimate of the unit's chunks, computed without asking the
// sketch about each of them. The two age together: every period Gets,
// the sketch halves its counters and the tier halves every unit's freq
// (halve; both are counted from the same Get calls, so the halvings
// match up to Gets in flight). Per-chunk counts saturate at maxFreq in
// the sketch, so freq is capped at maxFreq*chunks.
//
// Invariant for epochs (every chunk read once per epoch, random order):
// before its read in epoch k an uncached chunk has estimate k-1, and a
// cached one at least k-1, so the mean of any unit is >= k-1 and a Put
// (which compares the candidate's estimate minus the miss that caused
// it) never beats a unit: the cache keeps a fixed set. Halving keeps it
// (a unit's sum is halved once, rounding down less than each counter
// does). A candidate must also beat the unit's mean, rounded up, by a
// whole access (see admitsLocked), so a sketch overcount of one (a
// collision, see Options.SketchItems) does not let it in; only larger
// overcounts do. Rounding up covers the reads a RAM tier in front
// served, which never reach this tier: they leave a unit's mean a
// fraction below k-1, and one such read in the unit eviction would take
// was enough, before, for an overcount of one to evict the unit.
type admission struct {
	sk     *sketch.Sketch
	hash   func(store.ChunkID) uint64 // seeded per tier; tests fix it
	period int64                      // Gets between halvings, as the sketch's own
	gets   atomic.Int64               // Gets recorded since Open
}

// newAdmission sizes a sketch for items distinct chunks.
func newAdmission(items int) *admission {
	// sketch.New halves after 10*items additions (items >= its minimum).
	return &admission{sk: sketch.New(items), hash: seededHash(maphash.MakeSeed()), period: 10 * int64(items)}
}

// seededHash returns the sketch's hash of IDs: every field, length-
// prefixed, so distinct IDs never feed it the same bytes. The seed is
// random per tier, so nobody can pick names that collide on purpose.
func seededHash(seed maphash.Seed) func(store.ChunkID) uint64 {
	return func(id store.ChunkID) uint64 {
		var h maphash.Hash
		h.SetSeed(seed)
		writeID(&h, id)
		return h.Sum64()
	}
}

// writeID feeds id to h, each field length-prefixed.
func writeID(h io.Writer, id store.ChunkID) {
	var n [8]byte
	for _, s := range []string{id.Bucket, id.Key, id.ETag} {
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		_, _ = h.Write(n[:])
		_, _ = io.WriteString(h, s)
	}
	binary.LittleEndian.PutUint64(n[:], uint64(id.Index))
	_, _ = h.Write(n[:])
}

// record counts one Get of id and reports whether the sketch just halved
// (the caller then halves the units).
func (a *admission) record(id store.ChunkID) bool {
	a.sk.Add(a.hash(id))
	return a.gets.Add(1)%a.period == 0
}

// estimate returns about how often id was asked for lately.
func (a *admission) estimate(id store.ChunkID) int64 {
	return int64(a.sk.Estimate(a.hash(id)))
}

// recordGet counts a Get of id for the admission policy, if any.
func (t *Tier) recordGet(id store.ChunkID) {
	if t.adm != nil && t.adm.record(id) {
		t.halveUnits()
	}
}

// NoteReads counts n reads of chunk id that a tier in front of this one
// served (see store.ReadNoter) in the frequency of the unit holding it,
// so that a unit whose chunks RAM also holds (and serves) does not look
// cold to admission and lose its place to a chunk read less often. The
// sketch is left alone: it counts this tier's Gets, which its halving
// period is measured in, and a chunk this tier holds is never compared
// by its estimate.
func (t *Tier) NoteReads(id store.ChunkID, n int64) {
	if t.adm == nil || n <= 0 || t.begin() != nil {
		return
	}
	defer t.end()
	loc, err := t.idx.Lookup(id)
	if err != nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if u := t.units[loc.Unit]; u != nil && u.chunks > 0 {
		u.freq = min(u.freq+n, maxFreq*u.chunks)
	}
}

// halveUnits ages every unit's frequency with the sketch.
func (t *Tier) halveUnits() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, u := range t.units {
		u.freq /= 2
	}
}

// admitsLocked reports whether a Put of n bytes, of a chunk asked for prior
// times before the miss that caused the Put, may go ahead.
//
// Until the first eviction since Open the tier is filling: a Put that
// stays below HighWater goes ahead. Once the tier has evicted, it is
// full, and a Put that takes usage past LowWater (the band afterPut keeps
// it in) is compared: it goes ahead only if prior exceeds the mean
// frequency of the unit eviction would take first (the LRU one), rounded
// up, by more than one. A
// unit with no live chunks (dead space only) always loses. Comparing over
// the whole band, not only where a Put crosses HighWater, matters: an
// eviction frees room for many Puts, and letting them in unchecked would
// let one winner bring in a segment's worth of losers.
//
// The unit compared is the first evictable one: pinned units are set
// aside on the way, never compared (see pin.go); with none evictable the
// Put goes ahead, and fails with store.ErrPinnedFull if it needs room.
//
// The caller reserves the room in the same hold of mu (grantLocked).
// Judging pins may release mu on the way (walkLocked); the decision then
// rests on the walk made after the last release.
func (t *Tier) admitsLocked(prior, n int64) (bool, error) {
	free := t.highWater()
	if t.full {
		free = int64(t.opts.LowWater * float64(t.capacity()))
	}
	if t.used.Load()+n <= free {
		return true, nil
	}
	// The victim compared is the first evictable unit that holds chunks:
	// units holding none (a segment opened for writes that were then all
	// declined drifts to the back of the LRU list) cost nothing to evict,
	// and if they free enough the Put goes ahead without a comparison.
	var v *unit
	var empty int64
	err := t.walkLocked(t.newWalk(), func() { v, empty = nil, 0 }, func(u *unit) bool {
		if u.chunks <= 0 {
			empty += u.size
			return true
		}
		v = u
		return false
	})
	if err != nil {
		return false, err
	}
	if v == nil || t.used.Load()-empty+n <= free {
		return true, nil
	}
	// The candidate must beat the unit's mean, rounded up, by a whole
	// access: admitting it evicts every chunk of the unit, so neither the
	// common sketch overcount (one, from a collision) nor the reads this
	// tier never saw (served by a tier in front of it, which leave the
	// mean a fraction short of its chunks' counts) may be enough to throw
	// a unit away.
	return prior > ceilDiv(v.freq, v.chunks)+1, nil
}

// ceilDiv is a/b rounded up, for a >= 0 and b > 0.
func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// highWater is the usage past which a Put triggers eviction.
func (t *Tier) highWater() int64 {
	return int64(t.opts.HighWater * float64(t.capacity()))
}

// noteWritten counts a chunk of n bytes of bucket just indexed in u with
// frequency est.
func (t *Tier) noteWritten(u *unit, est int64, bucket string, n int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.bytesAddedLocked(u, bucket, n)
	chunkIndexedLocked(u)
	u.chunks++
	u.freq = min(u.freq+min(est, maxFreq), maxFreq*u.chunks)
}

// noteHitLocked counts a Get hit in u. Caller holds mu.
func noteHitLocked(u *unit) {
	u.freq = min(u.freq+1, maxFreq*max(u.chunks, 1))
}

// noteGoneLocked forgets one chunk of u (deleted or corrupt; its bytes
// are dead space now), taking its share of the frequency with it.
// Caller holds mu.
func noteGoneLocked(u *unit) {
	if u.chunks <= 0 {
		return
	}
	u.freq -= u.freq / u.chunks
	u.chunks--
}

// PutAlways stores data under id past the admission policy, evicting what
// it must, as Put does under PolicyLRU.
func (t *Tier) PutAlways(id store.ChunkID, data []byte) error {
	return t.put(id, data, false)
}
