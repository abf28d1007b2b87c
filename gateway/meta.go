// The metadata cache: object info by bucket and key, bounded, evicted by
// second chance (an approximation of least recently used that a hit does
// not reorder), with the time each entry was last confirmed by the origin.
package gateway

import (
	"hash/maphash"
	"sync"
	"time"

	"github.com/granary-dev/granary/store"
)

type metaEntry struct {
	key     string
	info    store.ObjectInfo
	checked time.Time // when the origin last confirmed info
}

// metaShards is the number of independently locked parts of a cache of
// at least metaShardMin entries; a smaller cache has one, so that its
// bound and its eviction order are exact.
const (
	metaShards   = 16
	metaShardMin = 64 * metaShards
)

// metaCache is safe for concurrent use. Keys are spread over shards by
// hash; each shard bounds its own entries (max divided among them), so
// the whole holds at most the max it was made with.
//
// A warm read writes nothing shared but its shard's lock: a hit marks its
// node used instead of moving it in a list, and eviction is a CLOCK: the
// hand passes used nodes (a second chance, unmarking them) and evicts the
// first it finds unused.
type metaCache struct {
	seed   maphash.Seed
	shards []metaShard
}

// metaShard: mu guards m, clock, hand and seq. Every node in m sits in
// one slot of clock (node.slot); a dropped node leaves its slot nil, for
// the hand to reuse.
//
// seq counts drops. A load reads seq before it asks the origin and stores
// its answer only if no drop of its shard happened since (putIf compares
// and inserts under mu, drop bumps and deletes under mu), so an answer the
// origin gave before a write through this node never outlives the write's
// drop.
type metaShard struct {
	mu    sync.Mutex
	max   int
	m     map[string]*metaNode
	clock []*metaNode
	hand  int
	seq   uint64
	_     [64]byte // keep neighbouring shards' locks off one cache line
}

// metaNode is an entry in its shard's clock.
type metaNode struct {
	metaEntry
	used bool // read since it was stored or the hand last passed it
	slot int
}

func newMetaCache(max int) *metaCache {
	n := 1
	if max >= metaShardMin {
		n = metaShards
	}
	c := &metaCache{seed: maphash.MakeSeed(), shards: make([]metaShard, n)}
	for i := range c.shards {
		s := &c.shards[i]
		s.max = max / n
		if i < max%n {
			s.max++
		}
		s.m = make(map[string]*metaNode)
	}
	return c
}

func metaKey(bucket, key string) string { return bucket + "\x00" + key }

func (c *metaCache) shard(k string) *metaShard {
	if len(c.shards) == 1 {
		return &c.shards[0]
	}
	return &c.shards[maphash.String(c.seed, k)%metaShards]
}

// lookup is get(metaKey(bucket, key)) without building the key on the
// heap: a warm read allocates nothing here (a map index by string(b)
// does not copy b, and maphash.Bytes hashes as maphash.String does).
func (c *metaCache) lookup(bucket, key string) (metaEntry, bool) {
	var buf [192]byte
	b := append(append(append(buf[:0], bucket...), 0), key...)
	s := &c.shards[0]
	if len(c.shards) > 1 {
		s = &c.shards[maphash.Bytes(c.seed, b)%metaShards]
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hitLocked(s.m[string(b)])
}

func (c *metaCache) get(k string) (metaEntry, bool) {
	s := c.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hitLocked(s.m[k])
}

// hitLocked returns n's entry, marking it read, or reports none if n is
// nil. The caller holds s.mu.
func (s *metaShard) hitLocked(n *metaNode) (metaEntry, bool) {
	if n == nil {
		return metaEntry{}, false
	}
	n.used = true
	return n.metaEntry, true
}

// sequence returns the drop count of k's shard, to pass to putIf.
func (c *metaCache) sequence(k string) uint64 {
	s := c.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seq
}

// putIf stores info unless a drop happened in k's shard since sequence
// returned seq.
func (c *metaCache) putIf(seq uint64, k string, info store.ObjectInfo, checked time.Time) {
	s := c.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seq != seq {
		return
	}
	s.put(k, info, checked)
}

// set stores info.
func (c *metaCache) set(k string, info store.ObjectInfo, checked time.Time) {
	s := c.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.put(k, info, checked)
}

func (c *metaCache) drop(k string) {
	s := c.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	if n, ok := s.m[k]; ok {
		s.clock[n.slot] = nil
		delete(s.m, k)
	}
}

// dropAll drops every entry.
func (c *metaCache) dropAll() {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		s.seq++
		clear(s.m)
		clear(s.clock)
		s.clock, s.hand = s.clock[:0], 0
		s.mu.Unlock()
	}
}

// put stores info; s.mu must be held. A new key takes a slot never used
// while the clock has fewer than max, else the first slot from the hand
// that is empty or holds a node not used since the hand last passed it
// (evicting that node), clearing the marks it passes: a full turn ends
// where it began, at the node stored longest ago, never at the new one.
func (s *metaShard) put(k string, info store.ObjectInfo, checked time.Time) {
	if n, ok := s.m[k]; ok {
		n.info, n.checked, n.used = info, checked, true
		return
	}
	if s.max <= 0 {
		return
	}
	n := &metaNode{metaEntry: metaEntry{key: k, info: info, checked: checked}}
	if len(s.clock) < s.max {
		n.slot = len(s.clock)
		s.clock = append(s.clock, n)
	} else {
		n.slot = s.freeSlot()
		s.clock[n.slot] = n
	}
	s.m[k] = n
}

// freeSlot advances the hand to a slot a new node may take, evicting the
// node in it, and leaves the hand past it.
func (s *metaShard) freeSlot() int {
	for {
		i := s.hand
		s.hand = (s.hand + 1) % len(s.clock)
		switch old := s.clock[i]; {
		case old == nil:
			return i
		case old.used:
			old.used = false
		default:
			delete(s.m, old.key)
			return i
		}
	}
}

// fresh reports whether metadata confirmed at checked may be used at now.
func (f Freshness) fresh(checked, now time.Time) bool {
	switch f.Mode {
	case Immutable:
		return true
	case Always:
		return false
	default:
		return now.Sub(checked) < f.TTL
	}
}
