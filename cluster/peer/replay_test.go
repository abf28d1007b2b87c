// The replay guard: each nonce once, out of order within the window, old
// boots and requests from before the receiver started refused.
package peer

import (
	"fmt"
	"testing"
	"time"
)

func TestReplayGuard(t *testing.T) {
	now := time.Now()
	g := newReplayGuard(now)
	ok := func(from, nonce string) {
		t.Helper()
		if err := g.accept(from, nonce, now); err != nil {
			t.Fatalf("%s %s: %v", from, nonce, err)
		}
	}
	refused := func(from, nonce string, at time.Time) {
		t.Helper()
		if err := g.accept(from, nonce, at); err == nil {
			t.Fatalf("%s %s accepted", from, nonce)
		}
	}
	for _, n := range []string{"10.3", "10.1", "10.2", "10.5"} { // out of order
		ok("a", n)
	}
	refused("a", "10.2", now)
	ok("b", "10.2") // another sender's numbers are its own
	ok("a", fmt.Sprintf("10.%d", 5+windowSize-1))
	refused("a", "10.4", now)                   // fell out of the window
	refused("a", "10.5", now)                   // likewise, seen or not
	ok("a", fmt.Sprintf("10.%d", 6+windowSize)) // far ahead: the window restarts
	for boot := 11; boot <= 10+maxBoots; boot++ {
		ok("a", fmt.Sprintf("%d.1", boot))
	}
	refused("a", "10.99999999", now) // its boot was forgotten, being the oldest
	refused("a", "9.1", now)
	refused("a", "x.1", now)
	refused("a", "20.0", now)
	refused("c", "20.1", now.Add(-startGrace-time.Second)) // signed before the receiver started
	ok("c", "20.1")
}
