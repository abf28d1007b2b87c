// The origin's health: a small state machine fed by the outcome of every
// call, which opens the breaker, logs each change of state once and keeps
// what the status report shows.
package guard

import (
	"errors"
	"time"

	"github.com/granary-dev/granary/store"
)

// The origin's states (see store.OriginHealth). The breaker is open
// exactly while it is down.
const (
	StateUnknown = store.HealthUnknown
	StateUp      = store.HealthUp
	StateDown    = store.HealthDown
)

// Health is a snapshot of the origin's health (the contract's value type).
type Health = store.OriginHealth

var _ store.OriginMonitor = (*Guard)(nil)

// health is the mutable state behind Health; Guard.mu guards it.
type health struct {
	state     string
	since     time.Time
	fails     int       // unreachable calls in a row
	asked     time.Time // when a call or probe was last sent (an idle probe: ended)
	cause     string
	lastErr   string
	lastErrAt time.Time
	timeouts  uint64
	failures  uint64
	rejected  uint64
}

// Health returns a snapshot of the origin's health.
func (g *Guard) Health() Health {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.st
	h := Health{Name: g.opts.Name, State: s.state, Since: s.since, Breaker: "closed", Cause: s.cause,
		LastError: s.lastErr, LastErrorAt: s.lastErrAt, Timeouts: s.timeouts, Failures: s.failures,
		Rejected: s.rejected, TimeoutSeconds: g.opts.Timeout.Seconds()}
	if s.state == StateDown {
		h.Breaker = "open"
	}
	return h
}

// admit fails a call at once while the breaker is open.
func (g *Guard) admit() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.st.state != StateDown {
		g.st.asked = time.Now()
		return nil
	}
	g.st.rejected++
	g.m.rejected.Inc()
	return store.ErrOriginDown
}

// answered records that the origin answered a call (successfully or with
// an error of its own, such as NoSuchKey or AccessDenied).
func (g *Guard) answered() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.st.fails = 0
	if g.st.state == StateUp {
		return
	}
	g.changeLocked(StateUp, "")
}

// failed records a call that found the origin unreachable, and opens the
// breaker once Threshold such calls came in a row (or at once, when
// trip says so: a failed start-up check or probe).
func (g *Guard) failed(err error, trip bool) {
	cause := Classify(err)
	g.mu.Lock()
	defer g.mu.Unlock()
	s := &g.st
	s.fails++
	s.failures++
	g.m.failures.WithLabelValues(cause).Inc()
	if cause == CauseTimeout {
		s.timeouts++
		g.m.timeouts.Inc()
	}
	s.lastErr, s.lastErrAt = err.Error(), time.Now()
	switch {
	case s.state == StateDown && cause != s.cause:
		// Still down, for another reason (a hung origin now refuses).
		s.cause = cause
		g.log.Warn().Str("cause", cause).Str("error", s.lastErr).Dur("down_for", time.Since(s.since)).
			Msg("origin still down, now: " + cause)
	case s.state != StateDown && (trip || s.fails >= g.opts.Threshold):
		s.cause = cause
		g.changeLocked(StateDown, cause)
		g.startProbeLocked()
	}
}

// changeLocked moves to state and logs the change, once; g.mu is held.
func (g *Guard) changeLocked(state, cause string) {
	s := &g.st
	was, wasSince := s.state, s.since
	s.state, s.since = state, time.Now()
	g.m.set(state)
	switch {
	case state == StateDown:
		g.log.Error().Str("cause", cause).Str("error", s.lastErr).Int("failures_in_a_row", s.fails).
			Msg("origin down: " + cause + "; cached objects are still served, misses fail at once with 503 SlowDown until it answers")
	case was == StateDown:
		s.cause = ""
		g.log.Info().Dur("down_for", s.since.Sub(wasSince)).Msg("origin up again")
	default:
		g.log.Info().Msg("origin up")
	}
}

// errTimedOut marks a call the guard ended because the origin did not
// answer within the timeout.
var errTimedOut = errors.New("no answer in time")
