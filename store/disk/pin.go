// Pinning: units holding chunks of pinned objects are never evicted.
//
// A unit is pinned if it holds a live chunk of an object Options.Pins
// reports pinned. Units are judged lazily, when eviction (or the admission
// check, which looks for the unit eviction would take) meets them at the
// back of the LRU list: judge lists the objects the unit holds from the
// index's reverse map and asks Pins about each. A pinned unit is set aside
// (moved from Tier.lru to Tier.aside), so later evictions do not look at
// it again; an evictable one stays in the LRU list and is evicted.
//
// Invariants (all guarded by Tier.mu):
//   - A live unit is in exactly one of lru and aside; u.aside says which.
//   - A verdict (u.judged, u.pinned, u.gen) holds for Generation u.gen
//     only. Chunks indexed in u invalidate an "evictable" verdict (one may
//     belong to an object pinned since its Put asked); chunks dropped from
//     u invalidate a "pinned" one (it may have been the only pinned one).
//     A judgment during which u changed (u.changes moved) is not kept.
//   - A unit with reservations of chunks pinned at Put time still in
//     flight (u.pinWriters > 0) counts as pinned whatever its verdict: the
//     index does not name those chunks yet.
//   - Every aside unit whose verdict is not "pinned under the current
//     Generation" is re-judged at the next eviction (refreshAsideLocked):
//     asideGen records the Generation the aside list was last refreshed
//     under, and staleAside flags a unit invalidated since. Units found
//     unpinned return to the LRU list as most recently used.
//
// Judging reads the index, so it runs with mu released (mu is never held
// across index calls): the walk over the LRU list then starts over, since
// the list may have changed meanwhile. A walk reads the Generation once
// and tags what it judges with it; it trusts the verdicts it reached
// itself (pinWalk.fresh) for its whole length, so a unit written to
// continuously is judged once per walk, not forever.
//
// Chunks pinned at Put time go to a segment of their own (Tier.pinActive),
// so that pinned chunks do not keep unpinned ones alive by sharing their
// segments. Objects pinned after their chunks were stored may share
// segments with unpinned data; such a segment is pinned as a whole.
package disk

import (
	"github.com/granary-dev/granary/store"
)

// verdict is what a walk makes of a unit.
type verdict int

const (
	evictable verdict = iota
	pinnedNow
	unknown // must be judged first
)

// pinWalk is one walk's view of the pins: the Generation read when it
// started and the verdicts it reached itself. A nil *pinWalk means no
// PinSet: everything is evictable.
type pinWalk struct {
	pins  store.PinSet
	gen   uint64
	fresh map[*unit]bool // unit -> pinned, judged during this walk
}

// newWalk starts a walk, or returns nil if nothing can be pinned.
func (t *Tier) newWalk() *pinWalk {
	if t.opts.Pins == nil {
		return nil
	}
	return &pinWalk{pins: t.opts.Pins, gen: t.opts.Pins.Generation()}
}

// classifyLocked judges u from what is known. Caller holds mu.
func (w *pinWalk) classifyLocked(u *unit) verdict {
	if w == nil {
		return evictable
	}
	if u.pinWriters > 0 {
		return pinnedNow
	}
	if p, ok := w.fresh[u]; ok {
		return verdictOf(p)
	}
	if u.judged && u.gen == w.gen {
		return verdictOf(u.pinned)
	}
	return unknown
}

func verdictOf(pinned bool) verdict {
	if pinned {
		return pinnedNow
	}
	return evictable
}

// judge reports whether unit id holds a live chunk of a pinned object. It
// reads the index: the caller must not hold mu.
func (t *Tier) judge(pins store.PinSet, id uint64) (bool, error) {
	pinned := false
	err := t.idx.UnitObjects(id, func(bucket, key string) bool {
		pinned = pins.Pinned(bucket, key)
		return !pinned
	})
	if err != nil {
		return false, ioErr("list a unit's objects", err)
	}
	return pinned, nil
}

// judgeLocked judges u with mu released, and records the verdict in the
// walk and, unless u changed meanwhile, in u. Caller holds mu; it is held
// again on return, but the unit table may have changed.
func (t *Tier) judgeLocked(w *pinWalk, u *unit) error {
	changes := u.changes
	t.mu.Unlock()
	pinned, err := t.judge(w.pins, u.id)
	t.mu.Lock()
	if err != nil {
		return err
	}
	if w.fresh == nil {
		w.fresh = make(map[*unit]bool)
	}
	w.fresh[u] = pinned
	if u.changes == changes {
		u.judged, u.pinned, u.gen = true, pinned, w.gen
	}
	return nil
}

// walkLocked calls visit on the evictable units of the LRU list, least
// recently used first, until visit returns false or the list ends. Pinned
// units met on the way are set aside. When a unit must be judged, mu is
// released meanwhile and the walk starts over from the back, after
// calling reset (so visit's caller forgets what it collected). Caller
// holds mu.
func (t *Tier) walkLocked(w *pinWalk, reset func(), visit func(u *unit) bool) error {
	for {
		reset()
		again := false
		for u := t.lru.back(); u != nil && !again; {
			prev := t.lru.prevOf(u)
			switch w.classifyLocked(u) {
			case evictable:
				if !visit(u) {
					return nil
				}
			case pinnedNow:
				t.setAsideLocked(u)
			case unknown:
				if err := t.judgeLocked(w, u); err != nil {
					return err
				}
				again = true
			}
			u = prev
		}
		if !again {
			return nil
		}
	}
}

// setAsideLocked moves u from the LRU list to the aside list.
func (t *Tier) setAsideLocked(u *unit) {
	t.lru.remove(u)
	t.aside.pushFront(u)
	u.aside = true
}

// refreshAsideLocked re-judges the aside units whose verdict is not
// "pinned under w's Generation", if the Generation changed or a unit was
// invalidated since the last refresh, and returns the unpinned ones to the
// LRU list as most recently used. It releases mu while it reads the index.
// A failure is logged: the units stay aside (the safe side) and are tried
// again at the next eviction.
func (t *Tier) refreshAsideLocked(w *pinWalk) {
	if w == nil || t.asideGen == w.gen && !t.staleAside {
		return
	}
	var todo []*unit
	var changes []uint64
	for u := t.aside.back(); u != nil; u = t.aside.prevOf(u) {
		if u.pinWriters == 0 && !(u.judged && u.pinned && u.gen == w.gen) {
			todo = append(todo, u)
			changes = append(changes, u.changes)
		}
	}
	t.asideGen, t.staleAside = w.gen, false
	if len(todo) == 0 {
		return
	}
	t.mu.Unlock()
	pinned := make([]bool, len(todo))
	var err error
	for i, u := range todo {
		if pinned[i], err = t.judge(w.pins, u.id); err != nil {
			break
		}
	}
	t.mu.Lock()
	if err != nil {
		t.staleAside = true
		t.log.Error().Err(err).Msg("judging pinned units again")
		return
	}
	for i, u := range todo {
		switch {
		case u.detached || !u.aside:
		case u.changes != changes[i] || u.pinWriters > 0:
			t.staleAside = true // changed while judged: next time
		default:
			u.judged, u.pinned, u.gen = true, pinned[i], w.gen
			if !pinned[i] {
				t.aside.remove(u)
				u.aside = false
				t.lru.pushFront(u)
			}
		}
	}
}

// pinnedAtPut reports whether id's object is pinned as a Put begins, which
// sends a small chunk to the pinned segment and guards its unit while the
// chunk is written (see unit.pinWriters).
func (t *Tier) pinnedAtPut(id store.ChunkID) bool {
	return t.opts.Pins != nil && t.opts.Pins.Pinned(id.Bucket, id.Key)
}

// pinWriteDone ends a reservation of a chunk pinned at Put time, indexed
// or not. An aside unit whose verdict does not cover it any more is
// flagged for the next refresh.
func (t *Tier) pinWriteDone(u *unit) {
	t.mu.Lock()
	defer t.mu.Unlock()
	u.pinWriters--
	if u.aside && u.pinWriters == 0 && !(u.judged && u.pinned && u.gen == t.opts.Pins.Generation()) {
		t.staleAside = true
	}
}

// chunkIndexedLocked notes a chunk newly indexed in u: an "evictable"
// verdict no longer holds. Caller holds mu.
func chunkIndexedLocked(u *unit) {
	u.changes++
	if !u.pinned {
		u.judged = false
	}
}

// chunkGoneLocked notes a chunk of u deleted or dropped as corrupt: a
// "pinned" verdict no longer holds, and the admission counters lose it.
// Caller holds mu.
func (t *Tier) chunkGoneLocked(u *unit) {
	u.changes++
	if u.pinned {
		u.judged = false
		if u.aside {
			t.staleAside = true
		}
	}
	noteGoneLocked(u)
}
