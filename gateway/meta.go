// The metadata cache: object info by bucket and key, bounded, least recently
// used first out, with the time each entry was last confirmed by the origin.
package gateway

import (
	"container/list"
	"sync"
	"time"

	"github.com/granary-dev/granary/store"
)

type metaEntry struct {
	key     string
	info    store.ObjectInfo
	checked time.Time // when the origin last confirmed info
}

// metaCache is safe for concurrent use. mu guards m, lru and seq; an
// element of lru holds a *metaEntry, front = most recently used.
//
// seq counts drops. A load reads seq before it asks the origin and stores
// its answer only if no drop happened since (putIf compares and inserts
// under mu, drop bumps and deletes under mu), so an answer the origin gave
// before a write through this node never outlives the write's drop.
type metaCache struct {
	mu  sync.Mutex
	max int
	m   map[string]*list.Element
	lru *list.List
	seq uint64
}

func newMetaCache(max int) *metaCache {
	return &metaCache{max: max, m: make(map[string]*list.Element), lru: list.New()}
}

func metaKey(bucket, key string) string { return bucket + "\x00" + key }

func (c *metaCache) get(k string) (metaEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.m[k]
	if !ok {
		return metaEntry{}, false
	}
	c.lru.MoveToFront(el)
	return *el.Value.(*metaEntry), true
}

// sequence returns the drop count, to pass to putIf.
func (c *metaCache) sequence() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seq
}

// putIf stores info unless a drop happened since sequence returned seq.
func (c *metaCache) putIf(seq uint64, k string, info store.ObjectInfo, checked time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seq != seq {
		return
	}
	c.put(k, info, checked)
}

// set stores info.
func (c *metaCache) set(k string, info store.ObjectInfo, checked time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.put(k, info, checked)
}

// put stores info; c.mu must be held.
func (c *metaCache) put(k string, info store.ObjectInfo, checked time.Time) {
	if el, ok := c.m[k]; ok {
		ent := el.Value.(*metaEntry)
		ent.info, ent.checked = info, checked
		c.lru.MoveToFront(el)
		return
	}
	c.m[k] = c.lru.PushFront(&metaEntry{key: k, info: info, checked: checked})
	for c.lru.Len() > c.max {
		old := c.lru.Back()
		c.lru.Remove(old)
		delete(c.m, old.Value.(*metaEntry).key)
	}
}

func (c *metaCache) drop(k string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	if el, ok := c.m[k]; ok {
		c.lru.Remove(el)
		delete(c.m, k)
	}
}

// dropAll drops every entry.
func (c *metaCache) dropAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	clear(c.m)
	c.lru.Init()
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
