// Package poll waits in tests for a condition that other goroutines or
// processes make true: readiness by polling, never by sleeping for it.
package poll

import (
	"testing"
	"time"
)

// Limit is how long Until waits: generous, for a busy machine.
const Limit = 30 * time.Second

// Until polls cond every 20 ms until it holds, failing t (naming what it
// waited for) once Limit has passed.
func Until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(Limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s after %v", what, Limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
