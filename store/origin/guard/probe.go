// The start-up check and the probe: both ask the origin to list its
// buckets, within the timeout, bypassing the breaker.
package guard

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/granary-dev/granary/store"
)

// ping lists the origin's buckets within the timeout; a timeout is
// returned as store.ErrUnavailable naming it.
func (g *Guard) ping(ctx context.Context) error {
	g.mu.Lock()
	g.st.asked = time.Now()
	g.mu.Unlock()
	cctx, cancel := context.WithTimeoutCause(ctx, g.opts.Timeout, errTimedOut)
	defer cancel()
	_, err := g.inner.ListBuckets(cctx)
	if err != nil && ctx.Err() == nil && context.Cause(cctx) == errTimedOut {
		err = fmt.Errorf("%w: %w within %v (%v)", store.ErrUnavailable, errTimedOut, g.opts.Timeout, err)
	}
	return err
}

// Check asks the origin, once, as a node starts, and logs what it found
// (one line). It returns nil if the origin answered; else an error that
// names the cause (Classify). An unreachable origin opens the breaker at
// once, so no client waits to find out; a 403 leaves it closed (the
// origin answers, but denies the node's credentials the listing).
func (g *Guard) Check(ctx context.Context) error {
	err := g.ping(ctx)
	switch {
	case err == nil:
		g.answered()
		return nil
	case ctx.Err() != nil:
		return err
	case errors.Is(err, store.ErrUnavailable):
		g.failed(err, true)
	default:
		g.answered()
		g.mu.Lock()
		g.st.cause, g.st.lastErr, g.st.lastErrAt = Classify(err), err.Error(), time.Now()
		g.mu.Unlock()
		g.log.Warn().Err(err).Str("cause", Classify(err)).
			Msg("the origin answers, but refused to list its buckets: check the origin credentials")
	}
	return fmt.Errorf("origin %s: %s: %w", g.opts.Name, Classify(err), err)
}

// startProbeLocked starts the probe unless it runs or the guard closed;
// g.mu is held.
func (g *Guard) startProbeLocked() {
	if g.probing || g.ctx.Err() != nil {
		return
	}
	g.probing = true
	g.wg.Add(1)
	go g.probe()
}

// probe asks the origin every ProbeInterval until it answers (any answer:
// a 403 is an origin that is up), then closes the breaker.
func (g *Guard) probe() {
	defer g.wg.Done()
	t := time.NewTimer(g.opts.ProbeInterval)
	defer t.Stop()
	for {
		select {
		case <-g.ctx.Done():
			g.mu.Lock()
			g.probing = false
			g.mu.Unlock()
			return
		case <-t.C:
		}
		err := g.ping(g.ctx)
		if g.ctx.Err() == nil && (err == nil || !errors.Is(err, store.ErrUnavailable)) {
			// One critical section: a failure seen after it finds the
			// breaker closed and may open it (and start a probe) again.
			g.mu.Lock()
			g.probing = false
			g.st.fails = 0
			g.changeLocked(StateUp, "")
			g.mu.Unlock()
			return
		}
		if g.ctx.Err() == nil {
			g.failed(err, true)
		}
		t.Reset(g.opts.ProbeInterval)
	}
}
