// A Bloom filter of the chunk keys the index holds, in memory, so that
// looking up a chunk the disk tier does not hold (every peer hop and
// every miss asks, twice) costs no bbolt transaction.
//
// Invariant, once the first build is done: every key in bucketChunks is
// in the filter in use (no false negative). An insert adds its key before
// it commits (so a lookup never misses it once it is visible) and again
// after (so a build whose snapshot predates the commit still gets it: the
// build's filter exists by then). Removed keys stay in: the filter drifts
// towards "maybe" as the tier churns, and is built afresh from the index
// once it has taken more keys than it was sized for.
package index

import (
	"sync"

	"github.com/bits-and-blooms/bloom/v3"
	bolt "go.etcd.io/bbolt"
)

// Sizing: a filter holds room for twice the index's keys when built (at
// least minPresence), with a false positive rate of presenceFP (about
// 1.2 bytes per key).
const (
	minPresence = 1 << 16
	presenceFP  = 0.01
)

// presence is the filter in use (cur) and the one being built (next).
type presence struct {
	mu   sync.RWMutex
	cur  *bloom.BloomFilter // nil until the first build: every lookup asks bbolt
	next *bloom.BloomFilter // being built, nil when no build runs
	// held counts the keys added to cur (removed ones included), room
	// the keys it was sized for.
	held, room uint
}

// absent reports whether key is certainly not in the index.
func (p *presence) absent(key []byte) bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.cur != nil && !p.cur.Test(key)
}

// add puts key in the filters, counting it as one more held if count;
// it reports whether the one in use has taken more keys than it was
// sized for (time to build another).
func (p *presence) add(key []byte, count bool) (full bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.next != nil {
		p.next.Add(key)
	}
	if p.cur == nil {
		return false
	}
	p.cur.Add(key)
	if count {
		p.held++
	}
	return p.held > p.room && p.next == nil
}

// start begins a build sized for keys, unless one runs: adds from now on
// go to it as well.
func (p *presence) start(keys int64) (*bloom.BloomFilter, uint, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.next != nil {
		return nil, 0, false
	}
	room := uint(max(2*keys, minPresence))
	p.next = bloom.NewWithEstimates(room, presenceFP)
	return p.next, room, true
}

// finish ends the build of next: it takes over if it scanned the whole
// index (ok), holding scanned keys.
func (p *presence) finish(next *bloom.BloomFilter, room, scanned uint, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if ok {
		p.cur, p.held, p.room = next, scanned, room
	}
	p.next = nil
}

// scanBatch is how many keys a build adds per hold of the lock.
const scanBatch = 1024

// buildPresence builds a filter from the index and puts it in use,
// unless a build runs already or the index closes meanwhile. It runs on
// its own goroutine (d.builds).
func (d *DB) buildPresence() {
	defer d.builds.Done()
	next, room, ok := d.present.start(d.count.Load())
	if !ok {
		return
	}
	var scanned uint
	batch := make([][]byte, 0, scanBatch)
	flush := func() {
		d.present.mu.Lock()
		for _, k := range batch {
			next.Add(k)
		}
		d.present.mu.Unlock()
		scanned += uint(len(batch))
		batch = batch[:0]
	}
	err := d.db.View(func(tx *bolt.Tx) error {
		err := tx.Bucket(bucketChunks).ForEach(func(k, _ []byte) error {
			if d.closing.Load() {
				return ErrClosed
			}
			batch = append(batch, k) // valid until the transaction ends
			if len(batch) == scanBatch {
				flush()
			}
			return nil
		})
		if err == nil {
			flush()
		}
		return err
	})
	d.present.finish(next, room, scanned, err == nil)
}

// rebuildPresence starts a build on its own goroutine, unless the index
// is closing.
func (d *DB) rebuildPresence() {
	d.closeMu.RLock()
	defer d.closeMu.RUnlock()
	if d.closed {
		return
	}
	d.builds.Add(1)
	go d.buildPresence()
}
