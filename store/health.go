// Origin health: the contract of what watches an origin (its guard, which
// bounds each call and opens a circuit breaker) as the status report,
// readiness and the engine see it.
package store

import "time"

// DefaultOriginTimeout bounds one wait for the origin when nothing else
// is configured.
const DefaultOriginTimeout = 5 * time.Second

// The origin's states. The breaker is open exactly while it is down.
const (
	HealthUnknown = "unknown" // nothing asked yet
	HealthUp      = "up"      // the origin answers
	HealthDown    = "down"    // calls fail at once; a probe runs
)

// OriginHealth is a snapshot of the origin's health, as `granary status`,
// the admin API and the console show it.
type OriginHealth struct {
	// Name is the origin (its URL).
	Name string `json:"name,omitempty"`
	// State is HealthUp, HealthDown or HealthUnknown; Since is when it
	// began.
	State string    `json:"state"`
	Since time.Time `json:"since"`
	// Breaker is "open" (calls fail at once) or "closed".
	Breaker string `json:"breaker"`
	// Cause names why the origin is down (or the last failure's cause),
	// LastError is that failure's text and LastErrorAt its time.
	Cause       string    `json:"cause,omitempty"`
	LastError   string    `json:"lastError,omitempty"`
	LastErrorAt time.Time `json:"lastErrorAt,omitzero"`
	// Timeouts counts calls the origin did not answer in time, Failures
	// every call that found it unreachable (timeouts included), Rejected
	// the calls the open breaker failed at once; all since start.
	Timeouts uint64 `json:"timeouts"`
	Failures uint64 `json:"failures"`
	Rejected uint64 `json:"rejected"`
	// TimeoutSeconds is the bound on a wait for the origin.
	TimeoutSeconds float64 `json:"timeoutSeconds"`
}

// Up reports whether the origin is not known to be down: what readiness
// asks of it.
func (h OriginHealth) Up() bool { return h.State != HealthDown }

// OriginMonitor watches an origin's health. Health is a snapshot taken
// under the monitor's own lock: it never waits for the origin, so it may
// be called on every readiness check. Implementations must be safe for
// concurrent use.
type OriginMonitor interface {
	Health() OriginHealth
}
