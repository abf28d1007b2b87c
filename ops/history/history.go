// Package history keeps a node's recent traffic: cumulative counters
// (chunk hits and misses, bytes served, origin requests and bytes),
// sampled every few seconds into a ring of fixed size that spans the last
// hour, node-wide and per bucket, and answered as the figures of each
// interval. The console draws its hit-rate and throughput charts from it.
package history

import (
	"sync"
	"time"
)

// Counters are cumulative figures at one instant. Node-wide, every field
// is counted; per bucket, the origin's are not (they are zero).
type Counters struct {
	Hits           int64 // chunk lookups a tier answered
	Misses         int64 // chunk lookups no tier answered
	BytesOut       int64 // object bytes sent to clients
	OriginRequests int64
	OriginErrors   int64
	OriginBytes    int64 // object bytes read from the origin
}

// Snapshot is what a Source reads at one instant.
type Snapshot struct {
	Node    Counters
	Buckets map[string]Counters
}

// Source reads the counters; it is called from one goroutine at a time.
type Source func() Snapshot

// Options configure a Recorder. The zero value samples every 5 s for the
// last hour and keeps the first 64 buckets it sees.
type Options struct {
	Every      time.Duration
	Span       time.Duration
	MaxBuckets int
}

// Defaults of the zero Options.
const (
	DefaultEvery      = 5 * time.Second
	DefaultSpan       = time.Hour
	DefaultMaxBuckets = 64
)

func (o Options) normalize() Options {
	if o.Every <= 0 {
		o.Every = DefaultEvery
	}
	if o.Span < o.Every {
		o.Span = max(DefaultSpan, o.Every)
	}
	if o.MaxBuckets <= 0 {
		o.MaxBuckets = DefaultMaxBuckets
	}
	return o
}

// Point is one interval's figures: what the counters grew by between
// the sample before At and the one at At.
type Point struct {
	At             time.Time `json:"at"`
	Seconds        float64   `json:"seconds"`
	Hits           int64     `json:"hits"`
	Misses         int64     `json:"misses"`
	BytesOut       int64     `json:"bytesOut"`
	OriginRequests int64     `json:"originRequests"`
	OriginErrors   int64     `json:"originErrors"`
	OriginBytes    int64     `json:"originBytes"`
}

// sample is the counters read at one instant.
type sample struct {
	at      time.Time
	node    Counters
	buckets map[string]Counters
}

// Recorder samples a Source into a ring. Safe for concurrent use; mu
// guards every field below it.
type Recorder struct {
	src  Source
	opts Options

	mu   sync.Mutex
	ring []sample // the last len(ring) samples; ring[next] is the oldest once full
	next int
	full bool
	// tracked are the buckets kept per bucket: the first MaxBuckets
	// names the Source reported, so memory stays bounded whatever the
	// number of buckets.
	tracked map[string]bool

	stop chan struct{}
	done chan struct{}
}

// New returns a Recorder of src; it samples only when Record is called,
// or from Start to Stop.
func New(src Source, o Options) *Recorder {
	o = o.normalize()
	n := int(o.Span/o.Every) + 1 // n samples make n-1 intervals: the whole span
	return &Recorder{src: src, opts: o, ring: make([]sample, n), tracked: map[string]bool{}}
}

// Every is the sampling interval.
func (r *Recorder) Every() time.Duration { return r.opts.Every }

// Start samples now and then every Every until Stop. It must be called
// once at most.
func (r *Recorder) Start() {
	r.stop, r.done = make(chan struct{}), make(chan struct{})
	r.Record(time.Now())
	go func() {
		defer close(r.done)
		t := time.NewTicker(r.opts.Every)
		defer t.Stop()
		for {
			select {
			case <-r.stop:
				return
			case now := <-t.C:
				r.Record(now)
			}
		}
	}()
}

// Stop ends sampling and waits for the sampler to return. It does nothing
// if Start was not called, and may be called more than once.
func (r *Recorder) Stop() {
	if r.stop == nil {
		return
	}
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	<-r.done
}

// Record reads the Source and keeps what it read as the sample at now.
func (r *Recorder) Record(now time.Time) {
	snap := r.src()
	r.mu.Lock()
	defer r.mu.Unlock()
	s := sample{at: now, node: snap.Node, buckets: make(map[string]Counters, len(r.tracked))}
	for name, c := range snap.Buckets {
		if !r.tracked[name] && len(r.tracked) < r.opts.MaxBuckets {
			r.tracked[name] = true
		}
		if r.tracked[name] {
			s.buckets[name] = c
		}
	}
	r.ring[r.next] = s
	r.next = (r.next + 1) % len(r.ring)
	r.full = r.full || r.next == 0
}

// Node returns the node-wide figures of each interval, oldest first.
func (r *Recorder) Node() []Point {
	return r.points(func(s sample) (Counters, bool) { return s.node, true })
}

// Bucket returns bucket's figures of each interval, oldest first; none
// for a bucket not tracked.
func (r *Recorder) Bucket(bucket string) []Point {
	return r.points(func(s sample) (Counters, bool) {
		c, ok := s.buckets[bucket]
		return c, ok
	})
}

// points turns consecutive samples into intervals. A bucket missing from
// the earlier sample had no counts yet (a bucket is tracked from the
// first sample that has it, or never), so it counts from zero; an
// interval whose later sample lacks the bucket is left out.
func (r *Recorder) points(of func(sample) (Counters, bool)) []Point {
	r.mu.Lock()
	defer r.mu.Unlock()
	ordered := r.ordered()
	out := []Point{}
	for i := 1; i < len(ordered); i++ {
		prev, _ := of(ordered[i-1])
		if cur, ok := of(ordered[i]); ok {
			out = append(out, interval(ordered[i-1].at, ordered[i].at, prev, cur))
		}
	}
	return out
}

// ordered returns the samples oldest first. Called with mu held.
func (r *Recorder) ordered() []sample {
	if !r.full {
		return r.ring[:r.next]
	}
	return append(append([]sample(nil), r.ring[r.next:]...), r.ring[:r.next]...)
}

// interval is the growth of the counters from a to b; a counter that went
// down (its source restarted) counts as no growth.
func interval(from, at time.Time, a, b Counters) Point {
	d := func(x, y int64) int64 { return max(0, y-x) }
	return Point{
		At: at, Seconds: at.Sub(from).Seconds(),
		Hits: d(a.Hits, b.Hits), Misses: d(a.Misses, b.Misses), BytesOut: d(a.BytesOut, b.BytesOut),
		OriginRequests: d(a.OriginRequests, b.OriginRequests), OriginErrors: d(a.OriginErrors, b.OriginErrors),
		OriginBytes: d(a.OriginBytes, b.OriginBytes),
	}
}
