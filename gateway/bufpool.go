// Recycled flight buffers: a chunk's buffer that nobody holds any more
// (no reader, no tier, no queue) comes back for the next flight of the
// same length instead of being freed, so a read that keeps no copy (a
// peer hop whose hot copy was not admitted, a miss the tiers refused)
// lands in memory already mapped: no page faults, no zeroing. On the
// development VM a fresh page costs 2-4 µs to fault in and zero, and
// reading a freshly faulted chunk costs again; an 8 MiB chunk is 2,048
// of them.
//
// Invariant: a buffer is handed out again only once the garbage
// collector found it unreachable. Its owner is never told when the last
// slice of it goes (readers, tiers, the disk queue and socket writes all
// hold slices), so the pool does not count references: it asks the
// runtime to tell it (a finalizer on the buffer's first byte, which runs
// only when no slice of the buffer is left anywhere) and takes the buffer
// back then, instead of letting it be freed.
package gateway

import (
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
)

// minPooled is the smallest buffer recycled: below it Go's allocator
// serves from size classes whose pages stay mapped.
const minPooled = 64 << 10

// bufPool holds idle buffers by length, at most max bytes in all (they
// are idle memory the node holds: see budget.go).
type bufPool struct {
	max int64
	mu  sync.Mutex // guards free and bytes
	// free holds idle buffers by their length; each is whole (its
	// length is its capacity) and has no finalizer.
	free  map[int][][]byte
	bytes int64
	// reused counts buffers handed out again, back counts those taken
	// back; for tests and the metric.
	reused, back atomic.Int64
}

func newBufPool(max int64) *bufPool {
	return &bufPool{max: max, free: make(map[int][][]byte)}
}

// get returns a buffer of n bytes, its contents undefined: an idle one of
// that length, else a new one. Either comes back to the pool once
// unreachable.
func (p *bufPool) get(n int) []byte {
	if n < minPooled || p.max <= 0 {
		return make([]byte, n)
	}
	p.mu.Lock()
	var b []byte
	if list := p.free[n]; len(list) > 0 {
		b = list[len(list)-1]
		list[len(list)-1] = nil
		p.free[n] = list[:len(list)-1]
		p.bytes -= int64(n)
		p.reused.Add(1)
	}
	p.mu.Unlock()
	if b == nil {
		b = make([]byte, n)
	}
	p.watch(b)
	return b
}

// watch has the runtime hand b back to the pool once nothing refers to
// any of its bytes. &b[0] is the start of b's allocation (a buffer of at
// least minPooled bytes is an object of its own, from make in get), as
// the finalizer requires.
func (p *bufPool) watch(b []byte) {
	n := len(b)
	runtime.SetFinalizer(&b[0], func(first *byte) { p.put(unsafe.Slice(first, n)) })
}

// put keeps an unreachable buffer, making room by dropping idle buffers
// of other lengths (a data set's sizes change), or lets it go if it
// would not fit even so.
func (p *bufPool) put(b []byte) {
	n := int64(len(b))
	p.mu.Lock()
	defer p.mu.Unlock()
	for size, list := range p.free {
		if p.bytes+n <= p.max {
			break
		}
		if int64(size) == n {
			continue
		}
		p.bytes -= int64(size * len(list))
		delete(p.free, size)
	}
	if p.bytes+n > p.max {
		return
	}
	p.free[len(b)] = append(p.free[len(b)], b)
	p.bytes += n
	p.back.Add(1)
}

// idle is the bytes the pool holds.
func (p *bufPool) idle() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bytes
}

// count is the number of idle buffers of n bytes.
func (p *bufPool) count(n int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.free[n])
}
