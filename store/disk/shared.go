// A disk budget two tiers share: a cluster node's tier of the chunks it
// owns and its tier of hot copies of chunks other members own, each in a
// directory of its own. The owner's tier may use the whole budget; the
// copies use what it leaves and give way (their units are evicted,
// whatever the admission policy says) when an owned chunk needs the room,
// never the other way. So a data set that fits every node's disk ends up
// on every node's disk and is read locally wherever it is read, while a
// larger one stays sharded: replication follows what fits, as the RAM
// tier's shared budget does (store/ram/shared.go).
//
// Invariant: the two tiers' used bytes sum to at most the total. Every
// reservation of either tier decides under Shared.mu (taken before the
// tier's own mu), and every other change only lowers a tier's usage.
// Lock order: Shared.mu, then the owner's mu, then the yielder's mu; the
// yielder only reads the owner's usage (atomic), never its lock.
package disk

import (
	"sync"
	"sync/atomic"
)

// Shared is a byte budget shared by a tier that holds what it owns and a
// tier that yields to it (Options.Shared, Options.Yields).
type Shared struct {
	total int64
	mu    sync.Mutex // serialises the reservations of both tiers
	// owner and yielder are set by Open.
	owner, yielder atomic.Pointer[Tier]
}

// NewShared returns a budget of total bytes for two tiers.
func NewShared(total int64) *Shared { return &Shared{total: max(total, 0)} }

// join records t as the shared budget's owner or yielder.
func (s *Shared) join(t *Tier, yields bool) {
	if yields {
		s.yielder.Store(t)
	} else {
		s.owner.Store(t)
	}
}

// lockShared takes the shared budget's lock, if the tier has one, and
// returns its release.
func (t *Tier) lockShared() func() {
	s := t.opts.Shared
	if s == nil {
		return func() {}
	}
	s.mu.Lock()
	return s.mu.Unlock
}

// capacity is the budget the tier's decisions use now: its own, or for
// the tier that yields, the part of the shared budget the owner's tier
// does not use (at most its own).
func (t *Tier) capacity() int64 {
	s := t.opts.Shared
	if s == nil || !t.opts.Yields {
		return t.opts.Capacity
	}
	owned := int64(0)
	if o := s.owner.Load(); o != nil {
		owned = o.used.Load()
	}
	return max(min(t.opts.Capacity, s.total-owned), 0)
}

// shedForLocked makes the yielding tier give way so that n more bytes of
// the owner's tier t fit the shared budget: it detaches the yielder's
// least recently used units (a segment's worth more than needed, so a
// run of owned Puts does not shed one unit each) and returns what
// finishes their eviction, to run once the locks are released. Caller
// holds Shared.mu and t.mu.
func (t *Tier) shedForLocked(n int64) func() {
	s := t.opts.Shared
	if s == nil || t.opts.Yields {
		return nil
	}
	y := s.yielder.Load()
	if y == nil {
		return nil
	}
	over := t.used.Load() + y.used.Load() + n - s.total
	if over <= 0 {
		return nil
	}
	y.mu.Lock()
	victims, err := y.evictLocked(max(y.used.Load()-over-y.opts.SegmentSize, 0), false, false)
	y.mu.Unlock()
	if err != nil {
		y.log.Error().Err(err).Msg("giving room back to owned chunks")
	}
	return func() { y.finishEvictions(victims) }
}
