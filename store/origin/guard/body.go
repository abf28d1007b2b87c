// A Get's body under the guard: each Read that makes no progress for the
// timeout ends the read (a hung origin costs one timeout, a slow one that
// keeps sending costs nothing, and a reader that pauses between Reads is
// not counted against the origin).
package guard

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/granary-dev/granary/store"
)

// watchedBody arms timer around each Read; when it fires, ctx (the Get's)
// is cancelled with errTimedOut and the Read fails.
type watchedBody struct {
	io.ReadCloser
	g      *Guard
	parent context.Context // the caller's
	ctx    context.Context // the Get's
	cancel context.CancelCauseFunc
	timer  *time.Timer
	once   sync.Once // reports the stall once
}

func (b *watchedBody) Read(p []byte) (int, error) {
	b.timer.Reset(b.g.opts.Timeout)
	n, err := b.ReadCloser.Read(p)
	b.timer.Stop()
	if err != nil && err != io.EOF && b.parent.Err() == nil && context.Cause(b.ctx) == errTimedOut {
		err = fmt.Errorf("%w: the body stalled, %w within %v (%v)", store.ErrUnavailable, errTimedOut, b.g.opts.Timeout, err)
		b.once.Do(func() { b.g.failed(err, false) })
	}
	return n, err
}

func (b *watchedBody) Close() error {
	b.timer.Stop()
	err := b.ReadCloser.Close()
	b.cancel(nil)
	return err
}
