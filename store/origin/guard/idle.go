// The idle probe: an origin nothing asked for Options.IdleProbe is asked
// by the guard (the probe's bucket listing), so an idle node learns of an
// origin that died (readiness, status, the breaker) within a bounded time
// rather than at the next client's miss. A node whose clients keep the
// origin busy sends no probe: their calls say as much.
package guard

import (
	"errors"
	"time"

	"github.com/granary-dev/granary/store"
)

// idleProbe runs until the guard closes, asking the origin whenever it
// went unasked long enough (idleDue).
func (g *Guard) idleProbe() {
	defer g.wg.Done()
	t := time.NewTimer(g.opts.IdleProbe)
	defer t.Stop()
	for {
		select {
		case <-g.ctx.Done():
			return
		case <-t.C:
		}
		wait, due := g.idleDue()
		if due {
			g.idleAsk()
			wait, _ = g.idleDue()
		}
		t.Reset(wait)
	}
}

// idleAsk asks the origin once and records what the answer says, as a
// call's outcome would: an unreachable origin counts towards the breaker,
// any answer (a 403 included) is an origin that is up.
func (g *Guard) idleAsk() {
	err := g.ping(g.ctx)
	g.mu.Lock()
	g.st.asked = time.Now() // the next probe's pause runs from this one's end
	g.mu.Unlock()
	switch {
	case g.ctx.Err() != nil:
		// Closing: nothing learnt.
	case err != nil && errors.Is(err, store.ErrUnavailable):
		g.failed(err, false)
	default:
		g.answered()
	}
}

// idleDue reports whether the origin is to be asked now, else how long
// until it may be. It may go unasked for IdleProbe, or ProbeInterval while
// its last calls failed (so Threshold failures come soon and open the
// breaker). A down origin has its own probe.
func (g *Guard) idleDue() (wait time.Duration, due bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	every := g.opts.IdleProbe
	if g.st.fails > 0 {
		every = min(every, g.opts.ProbeInterval)
	}
	if g.st.state == StateDown {
		return every, false
	}
	if quiet := time.Since(g.st.asked); quiet < every {
		return every - quiet, false
	}
	return 0, true
}
