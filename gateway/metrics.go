// Prometheus metrics of the engine and an origin decorator that counts
// every origin request and byte.
package gateway

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/granary-dev/granary/store"
)

// The hit, miss and byte counters carry a bucket label, bounded by
// bucketLabels.
type metrics struct {
	buckets       bucketLabels
	hits          *prometheus.CounterVec // by bucket, tier
	hitBytes      *prometheus.CounterVec // by bucket, tier
	misses        *prometheus.CounterVec // chunk found in no tier, by bucket
	joins         prometheus.Counter     // miss collapsed into a running flight
	metaHits      prometheus.Counter
	metaMisses    prometheus.Counter
	staleServed   prometheus.Counter
	revalidations prometheus.Counter     // background revalidations started
	originReqs    *prometheus.CounterVec // by op, result
	originBytes   *prometheus.CounterVec // by bucket
	originLatency *prometheus.HistogramVec
	fills         prometheus.Gauge       // background cache fills running
	listIndexed   prometheus.Counter     // LIST pages answered from the catalog
	peerReads     prometheus.Counter     // chunks read from an owner
	peerErrors    *prometheus.CounterVec // peer calls failed, by call
}

func newMetrics() *metrics {
	m := &metrics{
		hits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "granary_cache_hits_total", Help: "Chunks served from a cache tier, by bucket (the first 64, then _other) and tier.",
		}, []string{"bucket", "tier"}),
		hitBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "granary_cache_hit_bytes_total", Help: "Bytes of the chunks served from a cache tier (what the origin was spared), by bucket and tier.",
		}, []string{"bucket", "tier"}),
		misses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "granary_cache_misses_total", Help: "Chunks found in no tier (fetched from the origin or joined to a fetch), by bucket.",
		}, []string{"bucket"}),
		joins: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "granary_cache_miss_joins_total", Help: "Misses that joined a fetch already in flight instead of reading the origin.",
		}),
		metaHits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "granary_metadata_hits_total", Help: "Object metadata answered from the cache.",
		}),
		metaMisses: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "granary_metadata_misses_total", Help: "Object metadata fetched or revalidated at the origin.",
		}),
		staleServed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "granary_metadata_stale_served_total", Help: "Stale metadata served because the origin was unavailable.",
		}),
		revalidations: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "granary_metadata_revalidations_total", Help: "Stale metadata served at once and revalidated with the origin in the background.",
		}),
		originReqs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "granary_origin_requests_total", Help: "Requests sent to the origin, by op and result: ok, error, notfound (the origin answered that the key, bucket or upload does not exist), or refused (the origin answered that the request was the client's mistake).",
		}, []string{"op", "result"}),
		originBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "granary_origin_read_bytes_total", Help: "Object bytes read from the origin, by bucket.",
		}, []string{"bucket"}),
		originLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "granary_origin_request_duration_seconds", Help: "Origin request latency (to the first byte for reads).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"op"}),
		fills: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "granary_cache_fills_running", Help: "Objects written through this node being copied into the tiers in the background.",
		}),
		listIndexed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "granary_list_catalog_total", Help: "LIST pages answered from the catalog, without the origin.",
		}),
		peerReads: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "granary_peer_chunk_reads_total", Help: "Chunks (or their rest) read from an owner node instead of the origin.",
		}),
		peerErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "granary_peer_errors_total", Help: "Peer calls that failed or timed out, by call (get, head, put, forget).",
		}, []string{"call"}),
	}
	// Every peer call's series exists from the start at 0, so a rate over
	// it (a dashboard, an alert) has something to start from.
	for _, call := range []string{"get", "head", "put", "forget"} {
		m.peerErrors.WithLabelValues(call)
	}
	return m
}

// The tiers a hit is counted in, as indexes of hitTiers.
const (
	hitRAM = iota
	hitHot
	hitDisk
	hitHotDisk
)

// hitTiers are the tier label's values, by index.
var hitTiers = [...]string{hitRAM: "ram", hitHot: "hot", hitDisk: "disk", hitHotDisk: "hot-disk"}

// hitSeries are the hit counters of one bucket in one tier. A bucket's
// counts keep them (bucketCounts.hit) once looked up: looking them up by
// label values hashes both values, twice per hit.
type hitSeries struct{ count, bytes prometheus.Counter }

// series returns bucket's hit counters in tier (an index of hitTiers).
func (m *metrics) series(bucket string, tier int) *hitSeries {
	b := m.buckets.label(bucket)
	return &hitSeries{m.hits.WithLabelValues(b, hitTiers[tier]), m.hitBytes.WithLabelValues(b, hitTiers[tier])}
}

// miss counts a chunk found in no tier.
func (m *metrics) miss(bucket string) { m.misses.WithLabelValues(m.buckets.label(bucket)).Inc() }

// maxBucketLabels bounds the bucket label's values: the first buckets
// counted get their own series, every later one shares otherBucket, so
// clients creating buckets cannot grow /metrics without bound.
// otherBucket cannot be a bucket's name (S3 names have no '_').
const (
	maxBucketLabels = 64
	otherBucket     = "_other"
)

// bucketLabels hands out the bucket label values.
type bucketLabels struct {
	own sync.Map   // bucket name -> struct{}: the buckets with their own label
	mu  sync.Mutex // guards n, and admissions to own
	n   int
}

// label is bucket's label value: its name, or otherBucket once
// maxBucketLabels others have theirs.
func (b *bucketLabels) label(bucket string) string {
	if _, ok := b.own.Load(bucket); ok {
		return bucket
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.own.Load(bucket); ok {
		return bucket
	}
	if b.n >= maxBucketLabels {
		return otherBucket
	}
	b.n++
	b.own.Store(bucket, struct{}{})
	return bucket
}

func (m *metrics) register(reg prometheus.Registerer, tiers []NamedTier, extra ...prometheus.Collector) error {
	cs := append([]prometheus.Collector{m.hits, m.hitBytes, m.misses, m.joins, m.metaHits, m.metaMisses,
		m.staleServed, m.revalidations, m.originReqs, m.originBytes, m.originLatency, m.fills,
		m.listIndexed, m.peerReads, m.peerErrors}, extra...)
	for _, t := range tiers {
		cs = append(cs, tierCollectors(t.Name, t.Tier)...)
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

func tierCollectors(name string, t store.Tier) []prometheus.Collector {
	labels := prometheus.Labels{"tier": name}
	gauge := func(metric, help string, f func(store.TierStats) int64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: metric, Help: help, ConstLabels: labels},
			func() float64 { return float64(f(t.Stats())) })
	}
	return []prometheus.Collector{
		gauge("granary_tier_used_bytes", "Bytes held by a cache tier.", func(s store.TierStats) int64 { return s.UsedBytes }),
		gauge("granary_tier_capacity_bytes", "Byte budget of a cache tier.", func(s store.TierStats) int64 { return s.CapacityBytes }),
		gauge("granary_tier_chunks", "Chunks held by a cache tier.", func(s store.TierStats) int64 { return s.Chunks }),
		gauge("granary_tier_file_bytes", "Bytes a cache tier holds in a memory file (the RAM tier's chunks sent with sendfile): resident memory counts them only where mapped.",
			func(s store.TierStats) int64 { return s.FileBytes }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "granary_tier_evictions_total",
			Help: "Chunks evicted from a cache tier.", ConstLabels: labels},
			func() float64 { return float64(t.Stats().Evictions) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "granary_tier_declined_total",
			Help: "Chunks a full cache tier declined to keep the more popular ones it holds.", ConstLabels: labels},
			func() float64 { return float64(t.Stats().Declined) }),
	}
}

// countingOrigin counts and times every call to the origin it wraps.
type countingOrigin struct {
	store.Origin
	m *metrics
}

// observe counts a call by its result.
func (o countingOrigin) observe(op string, start time.Time, err error) {
	o.m.originReqs.WithLabelValues(op, originResult(err)).Inc()
	o.m.originLatency.WithLabelValues(op).Observe(time.Since(start).Seconds())
}

// originResult names an origin call's outcome: ok; notfound (the origin
// answered that the key, bucket or upload does not exist: a healthy
// origin's answer, which an error rate must not count); refused (the
// origin answered that the request was the client's mistake, a
// store.OriginError); else error, the origin failed.
func originResult(err error) string {
	var oe *store.OriginError
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, store.ErrNoSuchKey), errors.Is(err, store.ErrNoSuchBucket), errors.Is(err, store.ErrNoSuchUpload):
		return "notfound"
	case errors.As(err, &oe):
		return "refused"
	default:
		return "error"
	}
}

func (o countingOrigin) Stat(ctx context.Context, bucket, key string) (store.ObjectInfo, error) {
	start := time.Now()
	info, err := o.Origin.Stat(ctx, bucket, key)
	o.observe("stat", start, err)
	return info, err
}

func (o countingOrigin) Get(ctx context.Context, bucket, key string, r store.ReadRange) (io.ReadCloser, store.ObjectInfo, error) {
	start := time.Now()
	rc, info, err := o.Origin.Get(ctx, bucket, key, r)
	o.observe("get", start, err)
	if err != nil {
		return nil, info, err
	}
	return &countingReader{ReadCloser: rc, c: o.m.originBytes.WithLabelValues(o.m.buckets.label(bucket))}, info, nil
}

func (o countingOrigin) Put(ctx context.Context, bucket, key string, body io.Reader, size int64, meta store.ObjectMeta) (store.ObjectInfo, error) {
	start := time.Now()
	info, err := o.Origin.Put(ctx, bucket, key, body, size, meta)
	o.observe("put", start, err)
	return info, err
}

func (o countingOrigin) List(ctx context.Context, bucket string, opts store.ListOptions) (store.ListPage, error) {
	start := time.Now()
	page, err := o.Origin.List(ctx, bucket, opts)
	o.observe("list", start, err)
	return page, err
}

func (o countingOrigin) Delete(ctx context.Context, bucket, key string) error {
	start := time.Now()
	err := o.Origin.Delete(ctx, bucket, key)
	o.observe("delete", start, err)
	return err
}

// Copy forwards to the wrapped origin's Copier (the engine checks for one on
// the unwrapped origin before calling).
func (o countingOrigin) Copy(ctx context.Context, sb, sk, db, dk string, meta *store.ObjectMeta) (store.ObjectInfo, error) {
	start := time.Now()
	info, err := o.Origin.(store.Copier).Copy(ctx, sb, sk, db, dk, meta)
	o.observe("copy", start, err)
	return info, err
}

type countingReader struct {
	io.ReadCloser
	c prometheus.Counter
}

func (r *countingReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	r.c.Add(float64(n))
	return n, err
}
