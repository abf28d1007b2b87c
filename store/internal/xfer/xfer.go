// Package xfer copies request bodies into files for the store
// implementations: bounded by a declared size, stopped by a context, and
// telling a body that failed or ended early from a write that failed.
package xfer

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/granary-dev/granary/store"
)

var bufs = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

// Copy copies exactly size bytes of r to w, or all of r when size < 0. A
// body shorter than size is store.ErrIncompleteBody; with max > 0, a body
// of unknown size longer than max is store.ErrTooLarge. ctx is checked
// before every read of r.
func Copy(ctx context.Context, w io.Writer, r io.Reader, size, max int64) (int64, error) {
	bp := bufs.Get().(*[]byte)
	defer bufs.Put(bp)
	src := &errReader{ctx: ctx, r: r}
	var lr io.Reader = src
	switch {
	case size >= 0:
		lr = io.LimitReader(src, size)
	case max > 0:
		lr = io.LimitReader(src, max+1)
	}
	n, err := io.CopyBuffer(w, lr, *bp)
	switch {
	case src.err != nil && src.err != io.EOF:
		return n, fmt.Errorf("read body: %w", src.err)
	case err != nil:
		return n, fmt.Errorf("write: %w", err)
	case size >= 0 && n < size:
		return n, fmt.Errorf("%w: got %d of %d bytes", store.ErrIncompleteBody, n, size)
	case size < 0 && max > 0 && n > max:
		return n, fmt.Errorf("%w: body longer than %d bytes", store.ErrTooLarge, max)
	}
	return n, nil
}

// errReader stops reading once ctx is done and remembers the error its
// reader returned (io.CopyBuffer does not say which side failed).
type errReader struct {
	ctx context.Context
	r   io.Reader
	err error
}

func (e *errReader) Read(p []byte) (int, error) {
	if err := e.ctx.Err(); err != nil {
		e.err = err
		return 0, err
	}
	n, err := e.r.Read(p)
	if err != nil {
		e.err = err
	}
	return n, err
}
