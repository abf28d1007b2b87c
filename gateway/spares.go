// Spare chunk buffers: a chunk no tier keeps in memory (a peer hop the
// hot tier declines, a miss the RAM tier declines) is garbage once its
// readers, and the disk queue, are through with it. Its buffer goes back
// to a pool, and the next flight of a chunk of the same length lands in
// memory already touched, not in freshly allocated and zeroed pages
// (which, with the collections they bring, cost a hop more than its
// authentication). A cold read's chunk 0 comes with the object's
// metadata, in the metadata load's flight: the load holds it, and hands
// its hold to the first of its callers (firstChunk).
package gateway

import (
	"sync"
	"sync/atomic"

	"github.com/granary-dev/granary/internal/prefault"
)

// maxSpareSizes bounds how many distinct buffer lengths are pooled; a
// data set of many lengths pools the first ones met and allocates the
// rest. Buffers are pooled by exact length, so a pooled buffer a tier
// later keeps costs it no unaccounted capacity.
const maxSpareSizes = 1024

// spareBufs pools an engine's flight buffers by length. Pooled buffers
// are dropped by the garbage collector like any sync.Pool's, so they hold
// no memory for long.
type spareBufs struct {
	pools  sync.Map // int64 length -> *sync.Pool of *[]byte
	sizes  atomic.Int32
	pooled atomic.Int64 // buffers put gave back
	reused atomic.Int64 // buffers get returned from the pool
}

// get returns a buffer of n bytes: a spare one (its old bytes still in
// it: a flight overwrites every byte before it publishes it) or a new
// one, whose pages, if it is large, are mapped at once rather than
// faulted in one by one as the flight writes it (internal/prefault).
func (s *spareBufs) get(n int64) []byte {
	if p, ok := s.pools.Load(n); ok {
		if b, ok := p.(*sync.Pool).Get().(*[]byte); ok {
			s.reused.Add(1)
			return *b
		}
	}
	b := make([]byte, n)
	prefault.Populate(b)
	return b
}

// put gives b back for a later get of its length.
func (s *spareBufs) put(b []byte) {
	n := int64(len(b))
	p, ok := s.pools.Load(n)
	if !ok {
		if s.sizes.Load() >= maxSpareSizes {
			return
		}
		var loaded bool
		if p, loaded = s.pools.LoadOrStore(n, new(sync.Pool)); !loaded {
			s.sizes.Add(1)
		}
	}
	s.pooled.Add(1)
	p.(*sync.Pool).Put(&b)
}

// A flight's buffer is shared by its holders: its runner, its starter or
// joiner (a held chunkRef: a reader's, or a metadata load's, which the
// load's first caller takes over), and a disk job writing it.
// Invariant: buf goes back to spares only when the count reaches zero
// and the runner marked it spare (no tier kept it in memory); a holder
// that never lets go keeps it from the pool, never the other way round.
// The count only rises while it is above zero: under Engine.mu while the
// flight is registered (a joiner), from a holder handing on a hold (the
// runner, to a disk job), or by compare-and-swap from above zero (join).
// The runner lets go last of its own holds, after it retired the flight
// and set spare, so once zero the count stays zero and spare is final.

// hold counts one more holder of f: the caller holds Engine.mu and f is
// registered, or the caller is a holder.
func (f *flight) hold() { f.holders.Add(1) }

// letGo is one holder of f done with its bytes for good.
func (f *flight) letGo() {
	if f.holders.Add(-1) == 0 && f.spare.Load() {
		b := f.buf
		f.buf = nil // a holder that did not count itself fails loudly
		f.spares.put(b)
	}
}

// join takes a hold on f from outside Engine.mu, where f may have
// retired: held says the caller must let go; ok false if f's buffer went
// back to spares (the caller looks the chunk up anew). A flight no one
// holds that is not spare was kept by a tier: its bytes stay as they are,
// and may be read without a hold.
func (f *flight) join() (held, ok bool) {
	for {
		n := f.holders.Load()
		if n == 0 {
			return false, !f.spare.Load()
		}
		if f.holders.CompareAndSwap(n, n+1) {
			return true, true
		}
	}
}

// firstChunk is a metadata load's first chunk: its flight, and the load's
// hold on it, which the first caller of the load to take it takes over.
type firstChunk struct {
	fl      *flight
	claimed atomic.Bool
}

// take returns a ref to the first chunk for one caller of the load: the
// load's hold for the first, one of its own (join) for the others; the
// zero ref if there is none, or its buffer went back to spares before this
// caller came.
func (c *firstChunk) take() chunkRef {
	if c == nil {
		return chunkRef{}
	}
	if c.claimed.CompareAndSwap(false, true) {
		return chunkRef{fl: c.fl, held: true}
	}
	if held, ok := c.fl.join(); ok {
		return chunkRef{fl: c.fl, held: held}
	}
	return chunkRef{}
}

// release is the ref's owner done with its bytes for good. Each ref
// (not each copy of one) is released at most once.
func (r chunkRef) release() {
	if r.held {
		r.fl.letGo()
	}
	release(r.lease)
	if r.pool != nil {
		r.pool.put(r.data)
	}
}
