// Objects written through another member that the origin may not have yet
// (write-back): their metadata as the writer announced it, and the writer,
// asked for their chunks before the origin.
package gateway

import (
	"sync"
	"time"

	"github.com/granary-dev/granary/store"
)

// Bounds of the pending set: an entry is a hint (a wrong or stale one
// costs one peer call), so it is dropped when old or when the set is full.
const (
	pendingMax = 100_000
	pendingTTL = time.Hour
)

// pendingWrite is where a version written elsewhere can be read.
type pendingWrite struct {
	etag     string
	writer   string    // member ID
	modified time.Time // the version's LastModified, by its writer's clock
	at       time.Time // when this node learned of it
}

// pendingSet maps metaKey(bucket, key) to the version written elsewhere.
type pendingSet struct {
	mu sync.Mutex // guards m
	m  map[string]pendingWrite
}

func (p *pendingSet) put(bucket, key string, w pendingWrite) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[string]pendingWrite{}
	}
	if len(p.m) >= pendingMax {
		p.expireLocked(time.Now())
		if len(p.m) >= pendingMax {
			clear(p.m)
		}
	}
	p.m[metaKey(bucket, key)] = w
}

func (p *pendingSet) expireLocked(now time.Time) {
	for k, w := range p.m {
		if now.Sub(w.at) > pendingTTL {
			delete(p.m, k)
		}
	}
}

// get returns the version of bucket/key written elsewhere, if known.
func (p *pendingSet) get(bucket, key string) (pendingWrite, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	w, ok := p.m[metaKey(bucket, key)]
	if !ok || time.Since(w.at) > pendingTTL {
		return pendingWrite{}, false
	}
	return w, true
}

func (p *pendingSet) drop(bucket, key string) {
	p.mu.Lock()
	delete(p.m, metaKey(bucket, key))
	p.mu.Unlock()
}

func (p *pendingSet) dropAll() {
	p.mu.Lock()
	clear(p.m)
	p.mu.Unlock()
}

// writer returns the member that wrote chunk id's version, if known.
func (p *pendingSet) writer(id store.ChunkID) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	w, ok := p.m[metaKey(id.Bucket, id.Key)]
	if !ok || w.etag != id.ETag || time.Since(w.at) > pendingTTL {
		return "", false
	}
	return w.writer, true
}
