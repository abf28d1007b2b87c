// A budget two tiers share: a cluster node's tier of the chunks it owns
// and its tier of hot copies of chunks other members own. The owner's
// tier may use the whole budget; hot copies use what it leaves, and give
// way (are evicted, whatever the admission policy says) when an owned
// chunk needs the room. So a data set small enough for every node ends up
// held by every node, read locally wherever it is read, and a large one
// stays sharded, each node's RAM its owned share: replication follows
// what fits, without an operator sizing it.
//
// Invariant: used is the sum of the charged bytes of the tiers sharing
// the budget and never exceeds total: every Put of either tier decides
// under mu (taken before the tier's own mu), and every other change only
// lowers it.
package ram

import (
	"sync"
	"sync/atomic"
)

// Shared is a byte budget shared by a tier that holds what it owns and a
// tier that yields to it (Options.Shared, Options.Yields).
type Shared struct {
	total int64
	mu    sync.Mutex // serialises the budget decisions of both tiers
	used  atomic.Int64
	// yielder is the tier that gives way; set by New, read under mu.
	yielder *Tier
}

// NewShared returns a budget of total bytes for two tiers.
func NewShared(total int64) *Shared { return &Shared{total: max(total, 0)} }

// charge adds delta to the tier's charged bytes and to its shared
// budget's.
func (t *Tier) charge(delta int64) {
	t.used.Add(delta)
	if t.shared != nil {
		t.shared.used.Add(delta)
	}
}

// lockShared takes the shared budget's lock, if the tier has one, and
// returns its release.
func (t *Tier) lockShared() func() {
	if t.shared == nil {
		return func() {}
	}
	t.shared.mu.Lock()
	return t.shared.mu.Unlock
}

// overShared is how many bytes past the shared budget a chunk charged
// size would take it, after the yielding tier gave way if t does not
// yield; 0 without a shared budget. Caller holds the shared lock and t.mu.
func (t *Tier) overShared(size int64) int64 {
	s := t.shared
	if s == nil {
		return 0
	}
	over := s.used.Load() + size - s.total
	if over > 0 && !t.yields && s.yielder != nil {
		s.yielder.shed(over)
		over = s.used.Load() + size - s.total
	}
	return max(over, 0)
}

// fits reports whether a chunk charged size fits the tier's budget and
// its shared one.
func (t *Tier) fits(size int64) bool {
	return t.used.Load()+size <= t.capacity && (t.shared == nil || t.shared.used.Load()+size <= t.shared.total)
}

// shed evicts the tier's chunks, in its policy's order and past
// admission, until need bytes are freed or it holds none evictable: an
// owned chunk needs the room. Caller holds the shared lock, not t.mu.
func (t *Tier) shed(need int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	gen := t.judgePins()
	for start := t.used.Load(); start-t.used.Load() < need; {
		if !t.evictOne(gen) {
			return
		}
	}
}

// capacityNow is the capacity the tier reports: its own, or with a
// shared budget, for the tier that yields the room it has now (what it
// holds and what the budget has free), for the other the whole budget.
func (t *Tier) capacityNow() int64 {
	switch {
	case t.shared == nil:
		return t.capacity
	case t.yields:
		return t.used.Load() + max(t.shared.total-t.shared.used.Load(), 0)
	}
	return t.shared.total
}
