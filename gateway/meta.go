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
// node used instead of moving it in the ring, and eviction gives a used
// node at the back a second chance (moves it to the front, unmarked).
type metaCache struct {
	seed   maphash.Seed
	shards []metaShard
}

// metaShard: mu guards m, the ring and seq. The ring is circular through
// root, front = root.next = most recently inserted or given a second
// chance.
//
// seq counts drops. A load reads seq before it asks the origin and stores
// its answer only if no drop of its shard happened since (putIf compares
// and inserts under mu, drop bumps and deletes under mu), so an answer the
// origin gave before a write through this node never outlives the write's
// drop.
type metaShard struct {
	mu   sync.Mutex
	max  int
	m    map[string]*metaNode
	root metaNode
	seq  uint64
	_    [64]byte // keep neighbouring shards' locks off one cache line
}

// metaNode is an entry in its shard's ring.
type metaNode struct {
	metaEntry
	used       bool // read since it was inserted or last given a second chance
	prev, next *metaNode
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
		s.root.prev, s.root.next = &s.root, &s.root
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

func (c *metaCache) get(k string) (metaEntry, bool) {
	s := c.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.m[k]
	if !ok {
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
		s.unlink(n)
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
		s.root.prev, s.root.next = &s.root, &s.root
		s.mu.Unlock()
	}
}

// put stores info, evicting first to make room for a new key; s.mu must
// be held. The new node goes in unused, like a CLOCK's page: a full turn
// of second chances ends at the oldest node, never at the one stored.
func (s *metaShard) put(k string, info store.ObjectInfo, checked time.Time) {
	if n, ok := s.m[k]; ok {
		n.info, n.checked, n.used = info, checked, true
		return
	}
	if s.max <= 0 {
		return
	}
	for len(s.m) >= s.max {
		s.evictOne()
	}
	n := &metaNode{metaEntry: metaEntry{key: k, info: info, checked: checked}}
	s.m[k] = n
	s.pushFront(n)
}

// evictOne removes the node nearest the back not used since it was
// inserted or passed, giving each used node it passes a second chance.
// The shard must hold a node.
func (s *metaShard) evictOne() {
	for {
		n := s.root.prev
		s.unlink(n)
		if !n.used {
			delete(s.m, n.key)
			return
		}
		n.used = false
		s.pushFront(n)
	}
}

func (s *metaShard) pushFront(n *metaNode) {
	n.prev, n.next = &s.root, s.root.next
	s.root.next.prev = n
	s.root.next = n
}

func (s *metaShard) unlink(n *metaNode) {
	n.prev.next = n.next
	n.next.prev = n.prev
	n.prev, n.next = nil, nil
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
