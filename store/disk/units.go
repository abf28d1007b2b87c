// Units of storage and eviction: segments and chunk files, their reference
// counts, their LRU order, space reservation and eviction.
package disk

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/index"
)

// unit is a segment or a chunk file.
//
// Lifetime: a unit starts with one reference owned by the unit table.
// Readers and writers take a reference (acquire) only while it is live;
// eviction, corruption or deletion detaches it (out of the table and the
// LRU, its bytes no longer counted) and drops the table's reference. The
// last release closes and unlinks the file. So a read or write in flight
// always uses an open descriptor of the right file, and a detached unit is
// never handed out again; unit numbers are never reused, so an index entry
// that still names a detached unit simply misses.
type unit struct {
	id   uint64
	kind index.Kind
	size int64    // bytes on disk; for a segment, the end of the last reservation
	f    *os.File // segments: open for the unit's life; chunk files: nil
	// written: this process wrote every chunk of the unit (a segment it
	// created), so their bytes are what it wrote unless the device
	// fails, and a read of them is not checked to be lent (lend.go).
	written bool

	// Guarded by Tier.mu.
	refs       int
	detached   bool
	orphaned   bool  // the tier closed while it was lent: refs 1 closes f
	prev, next *unit // LRU links
	// Admission counters (see admission): live chunks written to the
	// unit, and the sum of their access counts.
	chunks, freq int64
	// Pin state (see pin.go): aside says the unit is in Tier.aside, not
	// Tier.lru; judged, pinned and gen are the last verdict and the
	// Generation it holds for; changes counts chunks indexed in or
	// dropped from the unit; pinWriters counts reservations of chunks
	// pinned at Put time not yet finished.
	aside, judged, pinned bool
	gen, changes          uint64
	pinWriters            int
	// buckets holds the chunk bytes per bucket indexed in the unit (see
	// quota.go); nil until the first.
	buckets map[string]int64
}

// unitList is a ring with a sentinel: front is the most recently used.
type unitList struct{ root unit }

func (l *unitList) init() { l.root.prev, l.root.next = &l.root, &l.root }

func (l *unitList) pushFront(u *unit) {
	u.prev, u.next = &l.root, l.root.next
	l.root.next.prev = u
	l.root.next = u
}

func (l *unitList) remove(u *unit) {
	u.prev.next = u.next
	u.next.prev = u.prev
	u.prev, u.next = nil, nil
}

func (l *unitList) touch(u *unit) {
	if l.root.next != u {
		l.remove(u)
		l.pushFront(u)
	}
}

// back returns the least recently used unit, or nil.
func (l *unitList) back() *unit {
	if l.root.prev == &l.root {
		return nil
	}
	return l.root.prev
}

// front returns the most recently used unit, or nil.
func (l *unitList) front() *unit {
	if l.root.next == &l.root {
		return nil
	}
	return l.root.next
}

// prevOf returns the unit used just more recently than u, or nil.
func (l *unitList) prevOf(u *unit) *unit {
	if u.prev == &l.root {
		return nil
	}
	return u.prev
}

// segPath and chunkPath name a unit's file; tmpPath is a chunk file being
// written.
func (t *Tier) segPath(id uint64) string {
	return filepath.Join(t.segDir, fmt.Sprintf("%016x.seg", id))
}

func (t *Tier) chunkPath(id uint64) string {
	return filepath.Join(t.chunkDir, fmt.Sprintf("%016x.chunk", id))
}

func (t *Tier) tmpPath(id uint64) string {
	return filepath.Join(t.chunkDir, fmt.Sprintf("%016x.tmp", id))
}

func (t *Tier) unitPath(u *unit) string {
	if u.kind == index.InSegment {
		return t.segPath(u.id)
	}
	return t.chunkPath(u.id)
}

// acquire returns the live unit id with a reference taken, marks it
// recently used (unless it is set aside as pinned) and counts a hit in
// it, or returns nil if it is not live. Only reads call it.
func (t *Tier) acquire(id uint64, access bool) *unit {
	u, _ := t.acquireWritten(id, access, false)
	return u
}

// acquireWritten is acquire, but with written it takes only a unit this
// process wrote: for another it returns nil and false, having taken and
// counted nothing.
func (t *Tier) acquireWritten(id uint64, access, written bool) (*unit, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	u := t.units[id]
	if u == nil {
		return nil, true
	}
	if written && !u.written {
		return nil, false
	}
	u.refs++
	if access {
		t.touchLocked(u)
		noteHitLocked(u)
	}
	return u, true
}

// isLive reports whether unit id is in the table.
func (t *Tier) isLive(id uint64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.units[id] != nil
}

// release drops a reference; the last one destroys a detached unit, and
// the last lease of a unit the tier closed meanwhile closes its file.
func (t *Tier) release(u *unit) {
	t.mu.Lock()
	u.refs--
	last := u.refs == 0
	orphan := u.refs == 1 && u.orphaned
	t.mu.Unlock()
	switch {
	case last:
		t.destroy(u)
	case orphan:
		_ = u.f.Close()
	}
}

// destroy closes and unlinks a unit nobody references any more.
func (t *Tier) destroy(u *unit) {
	if u.f != nil {
		_ = u.f.Close()
	}
	if err := os.Remove(t.unitPath(u)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.log.Error().Err(err).Uint64("unit", u.id).Msg("removing an evicted unit")
	}
}

// touchLocked marks u most recently used, unless it is set aside.
func (t *Tier) touchLocked(u *unit) {
	if !u.aside {
		t.lru.touch(u)
	}
}

// detachLocked takes u out of the table and the budget. The caller holds
// mu and must later release the table's reference (outside mu). It
// reports false if u was already detached.
func (t *Tier) detachLocked(u *unit) bool {
	if u.detached {
		return false
	}
	u.detached = true
	delete(t.units, u.id)
	if u.aside {
		t.aside.remove(u)
		u.aside = false
	} else {
		t.lru.remove(u)
	}
	t.used.Add(-u.size)
	t.bytesDetachedLocked(u)
	if t.active == u {
		t.active = nil
	}
	if t.pinActive == u {
		t.pinActive = nil
	}
	return true
}

// dropUnit detaches u (if still live) and drops the table's reference. It
// does not touch the index; callers clean entries themselves.
func (t *Tier) dropUnit(u *unit) {
	t.mu.Lock()
	ok := t.detachLocked(u)
	t.mu.Unlock()
	if ok {
		t.release(u)
	}
}

// evictLocked detaches evictable units (see pin.go), least recently used
// first, until used <= target, and returns them; the caller passes them
// to finishEvictions after unlocking mu. Pinned units met on the way are
// set aside. With keepNewest it never detaches the most recently used
// unit (the one a Put just wrote to), so watermark eviction does not
// throw away the chunk that triggered it. With strict it detaches nothing
// unless it can reach target, and fails with store.ErrPinnedFull.
//
// Caller holds mu, which is released meanwhile if units must be judged:
// the caller must not rely on state it read before the call.
func (t *Tier) evictLocked(target int64, keepNewest, strict bool) ([]*unit, error) {
	if t.used.Load() <= target {
		return nil, nil
	}
	w := t.newWalk()
	t.refreshAsideLocked(w)
	var picked []*unit
	var freed int64
	err := t.walkLocked(w, func() { picked, freed = picked[:0], 0 }, func(u *unit) bool {
		if t.used.Load()-freed <= target || keepNewest && u == t.lru.front() {
			return false
		}
		picked = append(picked, u)
		freed += u.size
		return true
	})
	if err != nil {
		return nil, err
	}
	if strict && t.used.Load()-freed > target {
		return nil, store.ErrPinnedFull
	}
	for _, u := range picked {
		t.detachLocked(u)
		t.full = true
	}
	return picked, nil
}

// finishEvictions drops the index entries of evicted units and releases
// them. If the index update fails, the entries stay but name units that
// are gone: reads miss, a Put replaces them, and Open drops them.
func (t *Tier) finishEvictions(victims []*unit) {
	if len(victims) == 0 {
		return
	}
	ids := make([]uint64, len(victims))
	for i, u := range victims {
		ids[i] = u.id
	}
	n, err := t.idx.DropUnits(ids)
	if err != nil {
		t.log.Error().Err(err).Int("units", len(ids)).Msg("dropping evicted units from the index")
	}
	t.evictions.Add(int64(n))
	for _, u := range victims {
		t.release(u)
	}
}

// makeRoomLocked evicts until n more bytes fit the budget, or fails with
// store.ErrPinnedFull having evicted nothing (see evictLocked, also for
// mu). Caller holds mu.
func (t *Tier) makeRoomLocked(n int64) ([]*unit, error) {
	return t.evictLocked(t.capacity()-n, false, true)
}

// reservation is the room a Put asks for: n bytes, in the pinned segment
// if pinned, granted only if the admission policy admits a chunk asked
// for prior times when check is set (see admitsLocked).
type reservation struct {
	n      int64
	pinned bool
	check  bool
	prior  int64
	// shed, if set once granted, finishes the eviction of hot copies
	// that gave way to it (see shedForLocked); run without locks held.
	shed func()
}

// finish runs what the reservation left to do once the locks are
// released.
func (r *reservation) finish() {
	if r.shed != nil {
		r.shed()
	}
}

// grantLocked decides r and makes room for it: store.ErrNotAdmitted if
// the policy declines it, else the units evicted (see makeRoomLocked).
// The decision and the reservation that follows share one hold of mu, so
// concurrent Puts each see the room the others took: they cannot all
// pass one check and together take the tier past HighWater. Caller
// holds mu.
func (t *Tier) grantLocked(r *reservation) ([]*unit, error) {
	if t.opts.Yields && r.n > t.capacity() {
		return nil, store.ErrNotAdmitted // owned chunks leave no room
	}
	if r.check {
		ok, err := t.admitsLocked(r.prior, r.n)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, store.ErrNotAdmitted
		}
	}
	victims, err := t.makeRoomLocked(r.n)
	if err == nil {
		r.shed = t.shedForLocked(r.n)
	}
	return victims, err
}

// reserveSegment reserves r.n bytes at the end of the active segment, or
// of the pinned one if r.pinned (a new one if none or if it is full),
// evicting first if the budget requires. It returns the segment with a
// reference taken (and, if pinned, a pinned writer counted: see
// pinWriteDone), the offset, and the evicted units for finishEvictions.
func (t *Tier) reserveSegment(r *reservation) (*unit, int64, []*unit, error) {
	defer t.lockShared()()
	t.mu.Lock()
	defer t.mu.Unlock()
	n, pinned := r.n, r.pinned
	victims, err := t.grantLocked(r)
	if err != nil {
		return nil, 0, nil, err
	}
	active := &t.active
	if pinned {
		active = &t.pinActive
	}
	if *active == nil || (*active).size+n > t.opts.SegmentSize {
		if err := t.newSegmentLocked(active); err != nil {
			return nil, 0, victims, err
		}
	}
	u := *active
	off := u.size
	u.size += n
	t.used.Add(n)
	u.refs++
	if pinned {
		u.pinWriters++
	}
	t.touchLocked(u)
	return u, off, victims, nil
}

// newSegmentLocked creates a segment file and makes it the active one
// (*active: Tier.active or Tier.pinActive). The sealed segment stays live
// and readable. Caller holds mu.
func (t *Tier) newSegmentLocked(active **unit) error {
	id := t.nextUnit
	f, err := os.OpenFile(t.segPath(id), os.O_RDWR|os.O_CREATE|os.O_EXCL, store.PrivateFileMode)
	if err != nil {
		return ioErr("create segment", err)
	}
	t.nextUnit++
	u := &unit{id: id, kind: index.InSegment, f: f, refs: 1, written: true}
	t.units[id] = u
	t.lru.pushFront(u)
	*active = u
	return nil
}

// reserveFile reserves a new chunk-file unit of r.n bytes, evicting
// first if the budget requires. The unit is returned with a writer
// reference (and, if pinned, a pinned writer counted).
func (t *Tier) reserveFile(r *reservation) (*unit, []*unit, error) {
	defer t.lockShared()()
	t.mu.Lock()
	defer t.mu.Unlock()
	n := r.n
	victims, err := t.grantLocked(r)
	if err != nil {
		return nil, nil, err
	}
	u := &unit{id: t.nextUnit, kind: index.InFile, size: n, refs: 2}
	if r.pinned {
		u.pinWriters = 1
	}
	t.nextUnit++
	t.units[u.id] = u
	t.lru.pushFront(u)
	t.used.Add(n)
	return u, victims, nil
}

// afterPut applies the watermarks: past HighWater, evict to LowWater (as
// far as pinned units allow: it stops when only they are left), or
// under PolicyTinyLFU by one segment's worth at most (see admitsLocked: a full
// tier fills the band between the watermarks only with chunks that beat
// the LRU unit, so in a steady workload a batch would leave it empty).
func (t *Tier) afterPut() {
	high := t.highWater()
	low := int64(t.opts.LowWater * float64(t.capacity()))
	if t.adm != nil {
		low = max(low, high-t.opts.SegmentSize)
	}
	t.mu.Lock()
	var victims []*unit
	var err error
	if t.used.Load() > high {
		victims, err = t.evictLocked(low, true, false)
	}
	t.mu.Unlock()
	if err != nil {
		t.log.Error().Err(err).Msg("evicting down to the low watermark")
	}
	t.finishEvictions(victims)
}
