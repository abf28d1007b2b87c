// A flight is one origin read of one chunk, shared by every reader that
// wants the chunk while it is being fetched, and streamed to them as it fills.
package gateway

import (
	"context"
	"io"
	"sync"
	"sync/atomic"
)

// flight fills buf from the origin. Invariants: buf has the chunk's exact
// length as capacity and is never reallocated; bytes buf[:n] never change
// once published, so a reader may copy them without holding mu after it has
// read n under mu. done is set once, with err nil only if n == len(buf).
type flight struct {
	mu   sync.Mutex // guards n, done, err, wake, need
	buf  []byte
	n    int
	done bool
	err  error
	// wake is closed (and replaced) when done is set or n reaches need,
	// the least n a waiter waits for (0: none waits). A waiter that
	// needs more than a publish brought is not woken for it: a reader
	// sending a chunk whole once it is all here wakes once.
	wake chan struct{}
	need int
	// retired is set once the flight gave back its charge, the bytes of
	// working memory it holds (budget.go); both guarded by Engine.mu,
	// not mu.
	retired bool
	charge  int64
	// want is why the chunk is wanted: the union of the intents of the
	// requests that joined the flight; guarded by Engine.mu.
	want intent
	// staged says the chunk was read from a tee, so its store skipped
	// the disk tier (the tee's fill queues it). Set by the runner before
	// settled is closed; read after.
	staged bool
	// settled is closed once the flight's runner is through: the chunk
	// is in the tiers (RAM stored, disk queued) or the flight failed.
	settled chan struct{}
	// holders counts who may still read buf, and spare says no tier
	// kept it, so it goes back to spares: see spares.go.
	holders atomic.Int32
	spare   atomic.Bool
	spares  *spareBufs
}

// newFlight returns a flight for a chunk of size bytes, its buffer from
// spares, held by its runner and its starter.
func newFlight(size int64, want intent, spares *spareBufs) *flight {
	f := &flight{buf: spares.get(size), want: want, wake: make(chan struct{}), settled: make(chan struct{}), spares: spares}
	f.holders.Store(2)
	return f
}

// intent reads f.want under engineMu, the Engine.mu that guards it.
func (f *flight) intent(engineMu *sync.Mutex) intent {
	engineMu.Lock()
	defer engineMu.Unlock()
	return f.want
}

// fill copies the chunk from r into the flight and marks it done. It
// returns the complete chunk, or the error that ended the fill (a body that
// ends early is io.ErrUnexpectedEOF; one that runs long is ignored past
// the chunk's length, which the origin's range bounds anyway).
func (f *flight) fill(r io.Reader) ([]byte, error) {
	const step = 256 << 10 // publish progress at least every 256 KiB
	for f.n < len(f.buf) {
		end := min(f.n+step, len(f.buf))
		m, err := r.Read(f.buf[f.n:end])
		if m > 0 {
			f.publish(m, nil, false)
		}
		if err == io.EOF && f.n < len(f.buf) {
			err = io.ErrUnexpectedEOF
		}
		if err != nil && err != io.EOF {
			f.publish(0, err, true)
			return nil, err
		}
	}
	f.publish(0, nil, true)
	return f.buf, nil
}

// fail ends the flight with err before any byte arrived.
func (f *flight) fail(err error) { f.publish(0, err, true) }

func (f *flight) publish(m int, err error, done bool) {
	f.mu.Lock()
	f.n += m
	if done {
		f.done, f.err = true, err
	}
	if f.need > 0 && (done || f.n >= f.need) {
		close(f.wake)
		f.wake, f.need = make(chan struct{}), 0
	}
	f.mu.Unlock()
}

// bytesAt returns the filled bytes from off on, waiting for at least one
// to arrive. It returns io.EOF at the end of a complete chunk, or the
// flight's error. The bytes are immutable (see the flight invariants).
func (f *flight) bytesAt(ctx context.Context, off int) ([]byte, error) {
	for {
		f.mu.Lock()
		n, done, err, wake := f.n, f.done, f.err, f.wake
		if off >= n && !done && (f.need == 0 || off+1 < f.need) {
			f.need = off + 1
		}
		f.mu.Unlock()
		if off < n {
			return f.buf[off:n], nil
		}
		if done {
			if err != nil {
				return nil, err
			}
			return nil, io.EOF
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
