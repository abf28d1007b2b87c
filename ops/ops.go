// Package ops is the operator's work on a node, built on the engine's
// exported API: warm-up jobs that load a prefix's listing into the
// catalog and its objects into the tiers, and the node's status report.
package ops

import (
	"context"
	"fmt"
	"sync"

	"github.com/granary-dev/granary/gateway"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Options configure an Ops.
type Options struct {
	// Registerer receives the warm-up metrics; nil means none.
	Registerer prometheus.Registerer
	Logger     zerolog.Logger
}

// Ops runs warm-ups on an engine and reports on it. Close it before the
// engine: its jobs use the engine until Close returns.
type Ops struct {
	e      *gateway.Engine
	m      *metrics
	log    zerolog.Logger
	jobs   jobs
	ctx    context.Context // the jobs' parent: cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // running jobs
}

// New returns the Ops of e.
func New(e *gateway.Engine, o Options) (*Ops, error) {
	m := newMetrics()
	if o.Registerer != nil {
		if err := m.register(o.Registerer); err != nil {
			return nil, fmt.Errorf("ops: metrics: %w", err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Ops{e: e, m: m, log: o.Logger.With().Str("component", "ops").Logger(),
		jobs: jobs{m: map[string]*warmState{}}, ctx: ctx, cancel: cancel}, nil
}

// Close cancels the running warm-ups and waits for them to stop.
func (o *Ops) Close() error {
	o.cancel()
	o.wg.Wait()
	return nil
}
