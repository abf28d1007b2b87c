// Package guard stands in front of an origin: it bounds how long a call may
// wait for the origin's answer, keeps a circuit breaker (after Threshold
// calls in a row found the origin unreachable, calls fail at once with
// store.ErrOriginDown until a background probe finds it answering), and
// tracks the origin's health for the node's status, metrics, readiness and
// logs (one line per change of state, naming the cause). An origin nothing
// asked for Options.IdleProbe is asked by the guard itself (idle.go), so
// the health of an idle node's origin is never older than that.
//
// What is bounded, by Options.Timeout:
//   - calls that move no body (Stat, List, Delete, buckets, multipart
//     bookkeeping): the whole call;
//   - Get: the wait for the answer, then each Read of the body that makes
//     no progress;
//   - Put, PutPart, CompleteUpload and Copy carry a body or may take long
//     at a healthy origin: the guard only applies the breaker; the origin
//     bounds them itself (the s3 origin's connect, write-stall and
//     response-header timeouts, which cmd sets to the same Timeout).
package guard

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/granary-dev/granary/store"
)

// Options configure a Guard. Only Origin is required.
type Options struct {
	Origin store.Origin
	// Name says which origin this is in logs (its URL, no secrets).
	Name string
	// Timeout bounds a call's wait for the origin (see the package
	// comment); 0 means DefaultTimeout.
	Timeout time.Duration
	// Threshold is how many calls in a row must find the origin
	// unreachable before the breaker opens; 0 means 3.
	Threshold int
	// ProbeInterval is the pause between probes of an origin that is
	// down; 0 means one second. Clients are told to retry after it.
	ProbeInterval time.Duration
	// IdleProbe is how long the origin may go unasked before the guard
	// asks it (the probe's bucket listing), so readiness and the breaker
	// learn of an origin that died while the node was idle; while the
	// last calls failed, it asks every ProbeInterval instead, until
	// Threshold failures open the breaker. A node serving traffic sends
	// no probe. 0 means DefaultIdleProbe; negative means never.
	IdleProbe time.Duration
	// Registerer receives the origin's health metrics; nil means none.
	Registerer prometheus.Registerer
	Logger     zerolog.Logger
}

// DefaultTimeout is Options.Timeout when unset.
const DefaultTimeout = store.DefaultOriginTimeout

// DefaultIdleProbe is Options.IdleProbe when unset.
const DefaultIdleProbe = 5 * time.Second

func (o Options) normalize() Options {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Threshold <= 0 {
		o.Threshold = 3
	}
	if o.ProbeInterval <= 0 {
		o.ProbeInterval = time.Second
	}
	if o.IdleProbe == 0 {
		o.IdleProbe = DefaultIdleProbe
	}
	return o
}

// Guard guards one origin. It is safe for concurrent use; Close stops its
// probes.
type Guard struct {
	opts  Options
	inner store.Origin
	log   zerolog.Logger
	m     *metrics

	mu sync.Mutex // guards st and probing
	st health
	// probing is set while the probe goroutine runs (the breaker is
	// open); it ends once the origin answers or the guard closes.
	probing bool

	ctx    context.Context // cancelled by Close: ends the probes
	cancel context.CancelFunc
	wg     sync.WaitGroup // the probe of a down origin and the idle probe
}

// New returns a guard over opts.Origin. It does not contact the origin at
// once (Check does); the idle probe first asks it IdleProbe from now.
func New(opts Options) (*Guard, error) {
	opts = opts.normalize()
	g := &Guard{opts: opts, inner: opts.Origin, m: newMetrics(),
		log: opts.Logger.With().Str("component", "origin").Str("origin", opts.Name).Logger()}
	g.st = health{state: StateUnknown, since: time.Now(), asked: time.Now()}
	g.ctx, g.cancel = context.WithCancel(context.Background())
	if opts.Registerer != nil {
		if err := g.m.register(opts.Registerer); err != nil {
			return nil, err
		}
	}
	if opts.IdleProbe > 0 {
		g.wg.Add(1)
		go g.idleProbe()
	}
	return g, nil
}

// Close stops the probes and waits for them; the origin, which the caller
// owns, stays open.
func (g *Guard) Close() error {
	g.mu.Lock() // a probe starts under mu only while ctx is live
	g.cancel()
	g.mu.Unlock()
	g.wg.Wait()
	return nil
}

// Timeout is the bound the guard applies.
func (g *Guard) Timeout() time.Duration { return g.opts.Timeout }

// RetryAfter is how long a client refused by the open breaker should wait
// before it tries again: the probe interval, at least a second.
func (g *Guard) RetryAfter() time.Duration { return max(g.opts.ProbeInterval, time.Second) }

// Origin returns the guarded origin: it has the optional abilities
// (store.Copier, store.Multipart) of the origin it guards, and only those;
// and it is always a store.Tagger and store.PartLocator, which answer
// store.ErrNotSupported when the origin is not (see tags.go).
func (g *Guard) Origin() store.Origin {
	_, c := g.inner.(store.Copier)
	_, m := g.inner.(store.Multipart)
	base := &guarded{g}
	switch {
	case c && m:
		return struct {
			*guarded
			copier
			multipart
		}{base, copier{g}, multipart{g}}
	case c:
		return struct {
			*guarded
			copier
		}{base, copier{g}}
	case m:
		return struct {
			*guarded
			multipart
		}{base, multipart{g}}
	}
	return base
}
