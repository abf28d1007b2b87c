// Background work yields to clients: while clients are reading or
// writing, a fill of what was just saved runs one unit (a chunk read into
// the tiers, a chunk written to disk) at a time and rests between units,
// so it takes at most a twentieth of a core's time; once clients are
// quiet it runs at full speed again. Training reads never stop while a
// checkpoint lands, and the checkpoint's fill is not on anyone's critical
// path.
package gateway

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// clientQuiet is how long after a client's last GET clients count
	// as quiet.
	clientQuiet = 50 * time.Millisecond
	// bgShare is the share of one core background work may take while
	// clients are busy: each unit is followed by a rest of bgShare-1
	// times its length. A tenth cost readers more where the node has
	// few cores: on two, shared with its clients, the node has about 0.7
	// of them, and its CPU per GET rose 4-8 µs during a fill (1-4 µs at
	// a twentieth; see the README's reads during a fill).
	bgShare = 20
	// bgMaxRest bounds one rest, so a slow unit (a disk that stalled)
	// does not park the fill for long.
	bgMaxRest = time.Second
)

// yielder is the state of the yielding: when a client last asked, and
// the one background unit allowed to run while clients are busy.
type yielder struct {
	lastGet atomic.Int64 // time.Now().UnixNano() of the last GET's start
	turn    sync.Mutex   // held by the paced unit running and its rest
}

// clientGet notes a client's GET (every one, answered from RAM or not).
// It writes the shared word at most once a millisecond: every GET on
// every core reads it, few write it.
func (e *Engine) clientGet() {
	if now := time.Now().UnixNano(); now-e.y.lastGet.Load() > int64(time.Millisecond) {
		e.y.lastGet.Store(now)
	}
}

// clientsBusy reports whether a client is reading or writing through
// this node, or asked within clientQuiet.
func (e *Engine) clientsBusy() bool {
	if e.writing.Load()+e.reading.Load() > 0 {
		return true
	}
	return time.Now().UnixNano()-e.y.lastGet.Load() < int64(clientQuiet)
}

// background runs one unit of background work: at once while clients are
// quiet; while they are busy, one paced unit at a time, each followed by
// a rest of bgShare-1 times its length (ctx ends the rest early). Every
// unit runs: background work slows down under load, it never stops.
func (e *Engine) background(ctx context.Context, unit func()) {
	if !e.clientsBusy() {
		unit()
		return
	}
	e.y.turn.Lock()
	defer e.y.turn.Unlock()
	start := time.Now()
	unit()
	rest := min(time.Since(start)*(bgShare-1), bgMaxRest)
	t := time.NewTimer(rest)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
