// The working memory: one byte budget (Options.WorkingBytes) for what the
// node holds for reads in flight, so that clients that stop reading cannot
// grow it without bound. What is charged, and by whom:
//
//   - a reader pays for each chunk in its window that costs memory (a
//     chunk read from disk, a flight it starts, a local copy read in
//     place), from the moment it asks for the chunk until it has sent it
//     or closes; a read-ahead only when there is room (tryTake), the
//     chunk it needs now by waiting for room (take);
//   - a flight nobody paid for (a warm-up, a fill, a peer asking this
//     owner, a metadata load's first chunk) is charged its buffer until
//     it retires, and a reader that lets go of a flight still filling
//     hands its payment to it (Engine.hand);
//   - a chunk the RAM tier holds costs nothing: the reader holds the
//     tier's own slice (store/ram Get returns it by reference), which the
//     tier's budget counts; nor does joining a flight in the air, paid
//     for by its starter and bound for the RAM tier.
//
// A stalled client therefore holds at most its window's payments, and a
// new read that finds no room waits AdmitWait, then fails with ErrBusy
// (503 SlowDown), before a byte of its answer is sent.
package gateway

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// ErrBusy means a read found no room in the node's working memory in
// time: too many reads hold chunks their clients have not taken yet. The
// client may retry (503 SlowDown).
var ErrBusy = errors.New("gateway: working memory full; retry later")

// memBudget counts the bytes charged against Options.WorkingBytes.
// Invariant: used is the sum of the charges taken and not given back; it
// passes size only by force (work that must run) or by a single charge
// larger than the whole budget taken while nothing else was charged.
type memBudget struct {
	size    int64
	used    atomic.Int64
	waiting atomic.Int32 // takers waiting for room; tryTake yields to them
	refused atomic.Int64 // takes that waited in vain (ErrBusy)
	mu      sync.Mutex   // guards wake
	// wake is closed (and replaced) when bytes are given back while a
	// taker waits.
	wake chan struct{}
}

func newMemBudget(size int64) *memBudget {
	return &memBudget{size: size, wake: make(chan struct{})}
}

// grab takes n bytes if they fit: within size, or alone in the budget.
func (b *memBudget) grab(n int64) bool {
	for {
		u := b.used.Load()
		if u+n > b.size && u > 0 {
			return false
		}
		if b.used.CompareAndSwap(u, u+n) {
			return true
		}
	}
}

// tryTake takes n bytes if they fit and no taker is waiting for room (a
// read-ahead never overtakes a read that needs its chunk now).
func (b *memBudget) tryTake(n int64) bool {
	return b.waiting.Load() == 0 && b.grab(n)
}

// force takes n bytes whether they fit or not.
func (b *memBudget) force(n int64) { b.used.Add(n) }

// take takes n bytes, waiting at most wait for room: ErrBusy when none
// came, ctx's error when ctx ended first.
func (b *memBudget) take(ctx context.Context, n int64, wait time.Duration) error {
	if b.grab(n) {
		return nil
	}
	b.waiting.Add(1)
	defer b.waiting.Add(-1)
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		// Read wake before grabbing: a give after a failed grab closes
		// this wake, since waiting counts this taker already.
		b.mu.Lock()
		w := b.wake
		b.mu.Unlock()
		if b.grab(n) {
			return nil
		}
		select {
		case <-w:
		case <-t.C:
			b.refused.Add(1)
			return ErrBusy
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// give returns n bytes and wakes the takers waiting for room.
func (b *memBudget) give(n int64) {
	if n == 0 {
		return
	}
	b.used.Add(-n)
	if b.waiting.Load() > 0 {
		b.mu.Lock()
		close(b.wake)
		b.wake = make(chan struct{})
		b.mu.Unlock()
	}
}

// collectors are the budget's metrics.
func (b *memBudget) collectors() []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "granary_working_memory_bytes",
			Help: "Bytes of working memory held for reads in flight (chunks read ahead or not yet sent, flights)."},
			func() float64 { return float64(b.used.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "granary_working_memory_capacity_bytes",
			Help: "The working memory's budget; past it read-ahead stops and new reads wait, then get 503 SlowDown."},
			func() float64 { return float64(b.size) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "granary_working_memory_refused_total",
			Help: "Reads refused (503 SlowDown) or cut because no working memory came free in time."},
			func() float64 { return float64(b.refused.Load()) }),
	}
}
