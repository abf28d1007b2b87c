// The origin's guard on a node: a bound on each wait for the origin, its
// circuit breaker, and the start-up check that logs what it found
// (--require-origin makes a failure fatal).
package main

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/origin/guard"
)

// guardOrigin puts a guard in front of origin and checks the origin once.
// The guard logs the outcome (one line); a failure is fatal only with
// --require-origin, else the node serves its cache while the guard's
// probe waits for the origin.
func guardOrigin(cfg Config, origin store.Origin, reg prometheus.Registerer, log zerolog.Logger) (*guard.Guard, error) {
	idle := time.Duration(cfg.OriginIdleProbe)
	if idle == 0 {
		idle = -1 // never; the guard's 0 is its default
	}
	g, err := guard.New(guard.Options{Origin: origin, Name: cfg.Origin, Timeout: time.Duration(cfg.OriginTimeout),
		IdleProbe: idle, Registerer: reg, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("origin guard: %w", err)
	}
	err = g.Check(context.Background())
	switch {
	case err == nil:
	case cfg.RequireOrigin:
		g.Close()
		return nil, fmt.Errorf("--require-origin: %w", err)
	case guard.Classify(err) == guard.CauseTLS && cfg.OriginCAFile == "":
		log.Warn().Str("origin", cfg.Origin).
			Msg("the origin's TLS handshake failed: if its certificate comes from a private CA, give that CA with --origin-ca-file")
	}
	return g, nil
}

// originLine is the status report's line about the origin.
func originLine(h *guard.Health) string {
	if h == nil {
		return ""
	}
	line := fmt.Sprintf("origin %s: %s since %s (breaker %s", h.Name, h.State, h.Since.Format(time.RFC3339), h.Breaker)
	if h.Timeouts > 0 || h.Failures > 0 {
		line += fmt.Sprintf(", %d timeouts, %d failures", h.Timeouts, h.Failures)
	}
	line += ")"
	if h.LastError != "" {
		line += fmt.Sprintf("\n  last error (%s) at %s: %s", h.Cause, h.LastErrorAt.Format(time.RFC3339), h.LastError)
	}
	return line + "\n"
}
