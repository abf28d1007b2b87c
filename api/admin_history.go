// The node's recent traffic through the signed admin API (the console's
// charts):
//
//	GET /_granary/history              node-wide (node-wide admin rights)
//	GET /_granary/history?bucket=B     one bucket (admin rights on B)
//
// Each answers 200 with a HistoryAnswer: the figures of each interval of
// the last hour, oldest first, sampled by this node only (not its
// cluster). A bucket's figures leave out the origin's, which are not
// counted per bucket.
package api

import (
	"sync"
	"sync/atomic"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/granary-dev/granary/ops/history"
)

// historyRoute is the path of the history call.
const historyRoute = "/_granary/history"

// HistoryAnswer is the answer of a history call.
type HistoryAnswer struct {
	// Every is the sampling interval in seconds.
	Every  float64         `json:"every"`
	Bucket string          `json:"bucket,omitempty"`
	Points []history.Point `json:"points"`
}

// history answers an authenticated history call (authorizeAdmin checked
// the bucket, or node-wide rights without one).
func (s *Server) history(c *fiber.Ctx, r *request) error {
	bucket := string(c.Request().URI().QueryArgs().Peek("bucket"))
	out := HistoryAnswer{Every: s.recorder.Every().Seconds(), Bucket: bucket}
	if bucket == "" {
		out.Points = s.recorder.Node()
	} else {
		r.bucket = bucket
		if err := checkBucket(bucket); err != nil {
			return err
		}
		out.Points = s.recorder.Bucket(bucket)
	}
	return c.JSON(out)
}

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

// newRecorder returns the history of s's engine and requests; Serve
// starts it and Shutdown stops it.
func (s *Server) newRecorder() *history.Recorder {
	return history.New(s.historySnapshot, history.Options{Every: s.opts.HistoryEvery})
}

// historySnapshot reads the counters the history samples: chunk lookups
// from the engine, bytes served from s, origin traffic from the metrics.
func (s *Server) historySnapshot() history.Snapshot {
	snap := history.Snapshot{Buckets: map[string]history.Counters{}}
	for _, b := range s.engine.LookedUp() {
		hits, misses := s.engine.Lookups(b)
		snap.Buckets[b] = history.Counters{Hits: hits, Misses: misses, BytesOut: s.served.of(b)}
		snap.Node.Hits += hits
		snap.Node.Misses += misses
	}
	snap.Node.BytesOut = s.served.total.Load()
	snap.Node.OriginRequests, snap.Node.OriginErrors, snap.Node.OriginBytes = originCounters(s.opts.Gatherer)
	return snap
}

// originCounters sums the engine's origin counters in g: requests, those
// that failed, and object bytes read. Zero without a Gatherer.
func originCounters(g prometheus.Gatherer) (reqs, errs, bytes int64) {
	if g == nil {
		return 0, 0, 0
	}
	families, _ := g.Gather() // what could be gathered is enough for a chart
	for _, mf := range families {
		for _, m := range mf.GetMetric() {
			v := int64(m.GetCounter().GetValue())
			switch mf.GetName() {
			case "granary_origin_requests_total":
				reqs += v
				for _, l := range m.GetLabel() {
					if l.GetName() == "result" && l.GetValue() != "ok" {
						errs += v
					}
				}
			case "granary_origin_read_bytes_total":
				bytes += v
			}
		}
	}
	return reqs, errs, bytes
}

// startRecorder starts the history, once (Serve may run more than once).
func (s *Server) startRecorder() { s.recorderOnce.Do(s.recorder.Start) }

// stopRecorder stops the history if it was started, and keeps a later
// Serve from starting it: the Once orders Start before Stop.
func (s *Server) stopRecorder() {
	s.recorderOnce.Do(func() {})
	s.recorder.Stop()
}
