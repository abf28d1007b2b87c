// Uploads give way to restores: while clients read staged copies (a
// checkpoint restored right after it was saved), the bytes of uploads to
// the origin wait, in bounded windows, so the restore has the node's CPU,
// disk and network to itself. The data is already durable on this node.
package writeback

import (
	"context"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// holdFor is the longest uploads wait at once for clients reading
	// staged copies; runFor is how long they then run before they may
	// wait again. Under reads that never stop, uploads still move at half
	// their pace, and no origin request body stalls for longer than
	// holdFor.
	holdFor = 2 * time.Second
	runFor  = 2 * time.Second
	// linger is how long after a client's last read of a staged copy the
	// restore still counts as going on: a reader reads a span, sends it,
	// then reads the next, and a restore's streams send one ranged GET
	// after another.
	linger = 50 * time.Millisecond
)

// yielder notes when clients last read a staged copy and holds upload
// bodies back while they do, within hold windows.
type yielder struct {
	linger, holdFor, runFor time.Duration // fixed before the uploaders start

	last    atomic.Int64 // unix nanoseconds of the last client read; 0: none
	waiting atomic.Int64 // upload bodies waiting now
	held    atomic.Int64 // nanoseconds upload bodies have waited, summed

	mu        sync.Mutex
	windowEnd time.Time // the current hold window's end
	freeUntil time.Time // no new window starts before this
}

func newYielder() yielder {
	return yielder{linger: linger, holdFor: holdFor, runFor: runFor}
}

// touch notes a client's read of a staged copy.
func (y *yielder) touch() { y.last.Store(time.Now().UnixNano()) }

// quietAt returns when the reads noted so far stop counting.
func (y *yielder) quietAt() time.Time {
	return time.Unix(0, y.last.Load()).Add(y.linger)
}

// wait returns at once when no client reads staged copies or uploads are
// in their free run; else it waits until the reads pause for linger, the
// hold window ends (opening one if none is), or ctx ends.
func (y *yielder) wait(ctx context.Context) {
	now := time.Now()
	if !now.Before(y.quietAt()) {
		return
	}
	end, ok := y.window(now)
	if !ok {
		return
	}
	y.waiting.Add(1)
	defer func(start time.Time) {
		y.waiting.Add(-1)
		y.held.Add(int64(time.Since(start)))
	}(now)
	for {
		until := y.quietAt()
		if end.Before(until) {
			until = end
		}
		if !now.Before(until) {
			return
		}
		t := time.NewTimer(until.Sub(now))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
		now = time.Now()
	}
}

// window returns the end of the hold window open at now, opening one if
// uploads are past their free run; false if they are in it.
func (y *yielder) window(now time.Time) (time.Time, bool) {
	y.mu.Lock()
	defer y.mu.Unlock()
	if now.Before(y.windowEnd) {
		return y.windowEnd, true
	}
	if now.Before(y.freeUntil) {
		return time.Time{}, false
	}
	y.windowEnd = now.Add(y.holdFor)
	y.freeUntil = y.windowEnd.Add(y.runFor)
	return y.windowEnd, true
}

// heldReader is an upload's body: each read first waits at the yielder.
type heldReader struct {
	io.Reader
	ctx context.Context
	y   *yielder
}

func (h *heldReader) Read(p []byte) (int, error) {
	h.y.wait(h.ctx)
	return h.Reader.Read(p)
}

// held wraps an upload's body so that it gives way to restores.
func (l *Log) held(ctx context.Context, r io.Reader) io.Reader {
	return &heldReader{Reader: r, ctx: ctx, y: &l.restores}
}
