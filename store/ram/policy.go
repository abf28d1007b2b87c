// Eviction policy seam of the RAM tier: a shard keeps its entries in a
// policy, which says which one to evict next. The default is LRU.
package ram

// policy orders the entries of one shard for eviction. Every method runs
// under the owning shard's mutex, so implementations need no locking. The
// prev/next fields of an entry belong to the policy while it holds the
// entry (between added and removed).
//
// Eviction is global: the tier asks every shard for its victim and evicts
// the one with the lowest rank, so ranks must be comparable across shards
// (LRU uses the last-access time).
type policy interface {
	// added records a new entry at time now (ns since the tier started).
	added(e *entry, now int64)
	// hit records an access to a present entry.
	hit(e *entry, now int64)
	// removed forgets an entry (deleted or evicted).
	removed(e *entry)
	// victim returns the entry to evict next and its rank, or nil if the
	// policy holds nothing. It does not remove the entry.
	victim() (e *entry, rank int64)
	// after returns the entry the policy would evict after e (which it
	// holds) and its rank, or nil if e is the last. Admission walks
	// victim, after(victim), ... to see what a Put would evict, and may
	// remove e (to set it aside as pinned) after asking for its next:
	// removing e must not change what after returned.
	after(e *entry) (next *entry, rank int64)
}

// lru is a least-recently-used list: most recent at the front, victim at
// the back. root is a sentinel, so the list is a ring and never nil.
type lru struct {
	root entry
}

var _ policy = (*lru)(nil)

// newLRU returns an empty LRU policy.
func newLRU() *lru {
	l := &lru{}
	l.root.prev, l.root.next = &l.root, &l.root
	return l
}

func (l *lru) added(e *entry, now int64) {
	e.stamp = now
	l.pushFront(e)
}

func (l *lru) hit(e *entry, now int64) {
	e.stamp = now
	if l.root.next == e {
		return // already the most recent: skip the pointer writes
	}
	l.unlink(e)
	l.pushFront(e)
}

func (l *lru) removed(e *entry) {
	l.unlink(e)
	e.prev, e.next = nil, nil
}

func (l *lru) victim() (*entry, int64) {
	if l.root.prev == &l.root {
		return nil, 0
	}
	e := l.root.prev
	return e, e.stamp
}

func (l *lru) after(e *entry) (*entry, int64) {
	if e.prev == &l.root {
		return nil, 0
	}
	return e.prev, e.prev.stamp
}

// pushFront links e as the most recent entry.
func (l *lru) pushFront(e *entry) {
	e.prev, e.next = &l.root, l.root.next
	l.root.next.prev = e
	l.root.next = e
}

// unlink takes e out of the ring.
func (l *lru) unlink(e *entry) {
	e.prev.next = e.next
	e.next.prev = e.prev
}
