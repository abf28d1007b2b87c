// The global memory budget: every read-ahead buffer of the mount is
// charged here, and past the limit its takers wait (backpressure).
package fuse

import (
	"context"
	"math/bits"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/semaphore"
)

// Buffers come in power-of-two size classes from 1<<minClassShift to
// 1<<maxClassShift bytes; a buffer is charged at its class size, what it
// really takes. Returned buffers wait in a sync.Pool, uncharged, until
// reused or dropped by the next garbage collections: they cost no more
// than the garbage they would otherwise be.
const (
	minClassShift = 17 // 128 KiB
	maxClassShift = 23 // 8 MiB
)

// budget bounds the bytes held in buffers. Acquisition is first come,
// first served (semaphore.Weighted), so a large request is not starved
// by small ones.
type budget struct {
	total int64
	sem   *semaphore.Weighted
	used  atomic.Int64 // bytes charged and not yet released
	// skipped counts read-ahead chunks given up after waiting too
	// long for memory.
	skipped atomic.Int64
	pools   [maxClassShift - minClassShift + 1]sync.Pool
}

func newBudget(total int64) *budget {
	return &budget{total: total, sem: semaphore.NewWeighted(total)}
}

// classOf returns the class index and class size for a buffer of n
// bytes (0 < n <= 1<<maxClassShift).
func classOf(n int) (int, int64) {
	shift := bits.Len(uint(n - 1))
	if shift < minClassShift {
		shift = minClassShift
	}
	return shift - minClassShift, int64(1) << shift
}

// maxBuffer is the largest buffer the budget hands out: the largest
// class, or a quarter of the budget, whichever is smaller, so that
// several readers always fit.
func (b *budget) maxBuffer() int {
	m := int64(1) << maxClassShift
	for m > 1<<minClassShift && m > b.total/4 {
		m >>= 1
	}
	return int(m)
}

// buffer is n bytes charged to the budget; give it back with put.
type buffer struct {
	b     []byte
	class int
	size  int64
}

// get waits until n bytes (at most maxBuffer) fit in the budget, or ctx
// ends, and returns a buffer of n bytes.
func (b *budget) get(ctx context.Context, n int) (*buffer, error) {
	class, size := classOf(n)
	if err := b.sem.Acquire(ctx, size); err != nil {
		return nil, err
	}
	b.used.Add(size)
	return b.fromPool(class, size, n), nil
}

// fromPool returns a pooled or new buffer of the class, already charged.
func (b *budget) fromPool(class int, size int64, n int) *buffer {
	p, _ := b.pools[class].Get().(*[]byte)
	if p == nil {
		s := make([]byte, size)
		p = &s
	}
	return &buffer{b: (*p)[:n], class: class, size: size}
}

// tryGet returns a buffer of n bytes if they fit in the budget now and
// nobody is waiting, else nil.
func (b *budget) tryGet(n int) *buffer {
	class, size := classOf(n)
	if !b.sem.TryAcquire(size) {
		return nil
	}
	b.used.Add(size)
	return b.fromPool(class, size, n)
}

// put returns a buffer to the pool and its bytes to the budget.
func (b *budget) put(buf *buffer) {
	s := buf.b[:cap(buf.b)]
	b.pools[buf.class].Put(&s)
	b.used.Add(-buf.size)
	b.sem.Release(buf.size)
}

// inUse returns the bytes currently charged.
func (b *budget) inUse() int64 { return b.used.Load() }
