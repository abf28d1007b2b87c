// The monitor's traffic history (the console's charts, served by the
// admin API's history call): a recorder sampling the engine's chunk
// lookups, the object bytes GETs sent (counted by core.report), the
// origin's traffic in the metrics and its failures from its guard.
package api

import (
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/granary-dev/granary/ops/history"
)

// maxServedBuckets bounds the buckets whose bytes served are counted one
// by one; the node-wide total counts every bucket.
const maxServedBuckets = 256

// servedBytes counts the object bytes GETs sent, node-wide and per
// bucket. Only answered GETs count, so the names are those of buckets a
// caller was allowed to read.
type servedBytes struct {
	total   atomic.Int64
	buckets sync.Map // bucket name -> *atomic.Int64
	n       atomic.Int64
}

// add counts the body bytes of a finished request, if it was an object GET.
func (sb *servedBytes) add(r *request, n int64) {
	if r.op != opGetObject || (r.status != 200 && r.status != 206) || n <= 0 {
		return
	}
	sb.total.Add(n)
	if c, ok := sb.buckets.Load(r.bucket); ok {
		c.(*atomic.Int64).Add(n)
		return
	}
	if sb.n.Load() >= maxServedBuckets {
		return
	}
	c, loaded := sb.buckets.LoadOrStore(r.bucket, new(atomic.Int64))
	if !loaded {
		sb.n.Add(1)
	}
	c.(*atomic.Int64).Add(n)
}

func (sb *servedBytes) of(bucket string) int64 {
	if c, ok := sb.buckets.Load(bucket); ok {
		return c.(*atomic.Int64).Load()
	}
	return 0
}

// newRecorder returns the history of m's engine and its server's
// requests; Serve starts it and Shutdown stops it.
func (m *Monitor) newRecorder() *history.Recorder {
	return history.New(m.historySnapshot, history.Options{Every: m.opts.HistoryEvery})
}

// historySnapshot reads the counters the history samples: chunk lookups
// from the engine, bytes served from the server's core (mounted before
// the recorder starts), origin traffic from the metrics.
func (m *Monitor) historySnapshot() history.Snapshot {
	snap := history.Snapshot{Buckets: map[string]history.Counters{}}
	for _, b := range m.engine.LookedUp() {
		hits, misses := m.engine.Lookups(b)
		snap.Buckets[b] = history.Counters{Hits: hits, Misses: misses, BytesOut: m.served.of(b)}
		snap.Node.Hits += hits
		snap.Node.Misses += misses
	}
	snap.Node.BytesOut = m.served.total.Load()
	snap.Node.OriginRequests, snap.Node.OriginBytes = originCounters(m.opts.Gatherer)
	snap.Node.OriginErrors = m.originFailures()
	return snap
}

// originFailures counts the origin calls that failed since start: those
// that found it unreachable and those its open breaker failed at once.
// An answer of the origin's own, such as NoSuchKey for a missing key or
// AccessDenied, is no failure: the origin works (the guard's view, which
// readiness and the origin's state share).
func (m *Monitor) originFailures() int64 {
	h, ok := m.engine.OriginHealth()
	if !ok {
		return 0
	}
	return int64(h.Failures + h.Rejected)
}

// originCounters sums the engine's origin counters in g: requests and
// object bytes read. Zero without a Gatherer.
func originCounters(g prometheus.Gatherer) (reqs, bytes int64) {
	if g == nil {
		return 0, 0
	}
	families, _ := g.Gather() // what could be gathered is enough for a chart
	for _, mf := range families {
		for _, m := range mf.GetMetric() {
			v := int64(m.GetCounter().GetValue())
			switch mf.GetName() {
			case "granary_origin_requests_total":
				reqs += v
			case "granary_origin_read_bytes_total":
				bytes += v
			}
		}
	}
	return reqs, bytes
}

// start starts the history, once (Serve may run more than once).
func (m *Monitor) start() { m.recorderOnce.Do(m.recorder.Start) }

// stop stops the history if it was started, and keeps a later Serve from
// starting it: the Once orders Start before Stop.
func (m *Monitor) stop() {
	m.recorderOnce.Do(func() {})
	m.recorder.Stop()
}
