// A stall watchdog for origin reads: a chunk fetch may take as long as it
// needs while bytes keep arriving, and is cancelled once none arrive for
// the stall timeout (a hung origin costs one timeout, a slow one nothing).
package gateway

import (
	"context"
	"io"
	"time"
)

// stallWatch cancels its context when Read makes no progress for d.
type stallWatch struct {
	io.ReadCloser
	timer  *time.Timer
	d      time.Duration
	cancel context.CancelFunc
}

// watchStalls returns a context for an origin read, cancelled if no
// progress is reported for d, and wrap, which turns the read's body into
// one that reports progress; closing the wrapped body ends the watch and
// the context. cancel ends both when no body came (the read failed).
func watchStalls(parent context.Context, d time.Duration) (ctx context.Context, wrap func(io.ReadCloser) io.ReadCloser, cancel context.CancelFunc) {
	ctx, cancelCtx := context.WithCancel(parent)
	timer := time.AfterFunc(d, cancelCtx)
	cancel = func() { timer.Stop(); cancelCtx() }
	wrap = func(rc io.ReadCloser) io.ReadCloser {
		return &stallWatch{ReadCloser: rc, timer: timer, d: d, cancel: cancel}
	}
	return ctx, wrap, cancel
}

func (s *stallWatch) Read(p []byte) (int, error) {
	n, err := s.ReadCloser.Read(p)
	if n > 0 {
		s.timer.Reset(s.d)
	}
	return n, err
}

func (s *stallWatch) Close() error {
	err := s.ReadCloser.Close()
	s.cancel()
	return err
}
