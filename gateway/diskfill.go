// The disk filler: chunks reach the disk tier on background goroutines, so
// a cold read streams at the origin's pace rather than the disk's, and a
// burst of misses queues at most DiskQueueBytes before further disk writes
// are dropped (the chunk is still in RAM; it is only missing from disk).
package gateway

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/granary-dev/granary/store"
)

type fillJob struct {
	id    store.ChunkID
	data  []byte
	keep  bool    // past the tier's admission policy
	paced bool    // background work: yields to clients (yield.go)
	from  *flight // if set, data is its buffer, held until written
	// lease, if set, is RAM's on data (lent in place): the job releases
	// it once written, or dropped.
	lease store.Lease
	// tier is where it goes: nil for the filler's tier (owned chunks),
	// else the hot copies on disk.
	tier store.Tier
}

// FillWorkers is how many chunks the disk filler writes at once: the disk
// tier's index commits concurrent inserts together (and lets a batch of
// them linger a millisecond for more), so one writer would pay a bbolt
// commit per chunk (a cold pass of 100 KiB samples spent 15% of the
// node's CPU there), and sixteen share one among several chunks (against
// four writers: 10-17% less of the node's CPU per cold miss). The disk
// tiers the filler writes are told so (disk.Options.Writers): each batch
// of inserts then waits for the others.
const FillWorkers = 16

// fillQueueJobs bounds the chunks waiting for the disk by count, beside
// the byte budget: enough that a burst of small-object misses (8,192 x
// 16 KiB is 128 MiB, the default budget) is held to the byte budget, not
// dropped for want of slots.
const fillQueueJobs = 8192

// diskFiller owns FillWorkers goroutines that write queued chunks to tier.
// queued counts the bytes of jobs in jobs; it is added before a send and
// subtracted after the write, so it bounds the memory the queue pins.
// Flights may finish after the engine closed, so enqueue may race close:
// mu makes "closed, else send" atomic (the send never blocks).
type diskFiller struct {
	tier    store.Tier
	e       *Engine
	jobs    chan fillJob
	queued  atomic.Int64
	max     int64
	dropped prometheus.Counter
	workers sync.WaitGroup // the goroutines of run

	mu     sync.RWMutex // guards closed and closing jobs
	closed bool
}

func newDiskFiller(e *Engine, tier store.Tier, max int64) *diskFiller {
	f := &diskFiller{tier: tier, e: e, max: max, jobs: make(chan fillJob, fillQueueJobs),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "granary_disk_fill_dropped_total",
			Help: "Chunks not written to the disk tier because its write queue was full.",
		})}
	f.workers.Add(FillWorkers)
	for range FillWorkers {
		go f.run()
	}
	return f
}

// enqueue queues a chunk for the disk, or drops it when the queue is full
// or closed. A paced chunk (a fill's, not a client's miss) is written as
// background work. If the data is flight from's buffer (else from is
// nil), a queued job holds from until written; the caller holds it
// meanwhile. The job's lease, if any, is the filler's: released once
// written or dropped.
func (f *diskFiller) enqueue(job fillJob) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.closed {
		release(job.lease)
		return
	}
	n := int64(len(job.data))
	if f.queued.Add(n) > f.max {
		f.queued.Add(-n)
		f.dropped.Inc()
		release(job.lease)
		return
	}
	if job.from != nil {
		job.from.hold() // before the send: the job may be written at once
	}
	select {
	case f.jobs <- job:
	default:
		f.queued.Add(-n)
		f.dropped.Inc()
		job.done()
	}
}

// done lets go of what the job held its data by, once written or dropped.
func (job fillJob) done() {
	if job.from != nil {
		job.from.letGo()
	}
	release(job.lease)
}

// run writes queued chunks until the queue is closed and drained.
func (f *diskFiller) run() {
	defer f.workers.Done()
	for job := range f.jobs {
		tier, name := f.tier, "disk"
		if job.tier != nil {
			tier, name = job.tier, "hot-disk"
		}
		put := func() { f.e.putTier(tier, name, job.id, job.data, job.keep) }
		if job.paced {
			f.e.background(f.e.fillCtx, put)
		} else {
			put()
		}
		f.queued.Add(-int64(len(job.data)))
		job.done()
	}
}

// close writes what is queued and stops the goroutines.
func (f *diskFiller) close() {
	f.mu.Lock()
	if !f.closed {
		f.closed = true
		close(f.jobs)
	}
	f.mu.Unlock()
	f.workers.Wait()
}

// waitRoom waits until the queue has room for n more bytes (at most half
// the budget in use), or ctx ends: a filler that must not lose chunks
// paces itself on it rather than be dropped.
func (f *diskFiller) waitRoom(ctx context.Context, n int64) {
	for q := f.queued.Load(); q > 0 && q+n > f.max/2; q = f.queued.Load() {
		select {
		case <-ctx.Done():
			return
		case <-time.After(fillPace):
		}
	}
}
