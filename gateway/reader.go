// The object reader: streams a byte range chunk by chunk, with the next
// chunks of the range already being looked up or fetched (read-ahead).
package gateway

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/granary-dev/granary/store"
)

// future is a chunk being located: ready is closed once ref is set, or
// local, when the chunk is read in place from a copy on this node's disk
// (see localSpan).
type future struct {
	idx     int64
	ready   chan struct{}
	ref     chunkRef
	local   opener
	retried bool // a transient failure was retried; set by the reader only
}

// objectReader yields bytes [off, end) of one object version. Invariants:
// window holds futures for consecutive chunk indexes starting at the chunk
// that contains off, at most ReadAhead+1 of them, none past the range.
type objectReader struct {
	e      *Engine
	ctx    context.Context
	cancel context.CancelFunc
	info   store.ObjectInfo
	off    int64 // next byte to return
	end    int64 // one past the last byte to return
	next   int64 // next chunk index to put in the window
	last   int64 // last chunk index of the range
	window []*future
	// first, if set, is chunk 0's flight from the metadata load: the
	// window takes it instead of looking chunk 0 up again.
	first *flight
	// ramAsked is the chunk whose RAM lookup Get recorded already (-1:
	// none), so the window only peeks at it.
	ramAsked int64
	closed   bool    // Close ran: the reader no longer counts in e.reading
	buf      *[]byte // from localBufs, for localSpan; returned by Close
}

// localBufs holds maxSpan-sized buffers that local reads land in: reused,
// so a restore right after a save touches no fresh memory (localSpan).
var localBufs = sync.Pool{New: func() any { b := make([]byte, maxSpan); return &b }}

func (e *Engine) newReader(ctx context.Context, info store.ObjectInfo, off, n int64) *objectReader {
	ctx, cancel := context.WithCancel(ctx)
	r := &objectReader{e: e, ctx: ctx, cancel: cancel, info: info, off: off, end: off + n, ramAsked: -1}
	r.next = off / e.opts.ChunkSize
	r.last = (off + n - 1) / e.opts.ChunkSize
	e.reading.Add(1)
	return r
}

// fill tops the window up to ReadAhead chunks beyond the current one. A
// chunk in RAM resolves at once; others resolve on a goroutine, since a disk
// read or the start of a fetch should not hold up the chunk being streamed.
func (r *objectReader) fill() {
	for r.next <= r.last && len(r.window) <= r.e.opts.ReadAhead {
		f := &future{idx: r.next, ready: make(chan struct{})}
		r.window = append(r.window, f)
		r.next++
		if f.idx == 0 && r.first != nil {
			f.ref, r.first = chunkRef{fl: r.first}, nil
			close(f.ready)
			continue
		}
		if b, ok := r.e.lookupRAM(r.e.chunkID(r.info, f.idx), f.idx != r.ramAsked); ok && int64(len(b)) == r.e.chunkLen(r.info.Size, f.idx) {
			f.ref = chunkRef{data: b}
			close(f.ready)
			continue
		}
		want := wantNow
		if len(r.window) > 1 { // the first future is the chunk read now
			want = wantAhead
		}
		go func() {
			if f.local = r.e.localSource(r.e.chunkID(r.info, f.idx)); f.local == nil {
				f.ref = r.e.chunk(r.info, f.idx, want, lookDisk)
			}
			close(f.ready)
		}()
	}
}

// transient reports whether a chunk fetch failed in a way another attempt
// may not: the origin unreachable or stalled, or its body cut short. (An
// object that changed at the origin is not transient: its version is gone.)
func transient(err error) bool {
	return unavailable(err) || errors.Is(err, context.Canceled) || errors.Is(err, io.ErrUnexpectedEOF)
}

// maxSpan bounds one write of WriteTo, so a writer that renews a deadline
// per write renews it at least every MiB.
const maxSpan = 1 << 20

// span returns the next bytes of the range, as they sit in the cache's
// memory: at least one, at most the rest of the current chunk (and
// maxSpan), waiting for a flight to bring them. The caller advances off.
func (r *objectReader) span() ([]byte, error) {
	if r.off >= r.end {
		return nil, io.EOF
	}
	cs := r.e.opts.ChunkSize
	idx := r.off / cs
	for len(r.window) > 0 && r.window[0].idx < idx {
		r.window = r.window[1:]
	}
	r.fill()
	f := r.window[0]
	select {
	case <-f.ready:
	case <-r.ctx.Done():
		return nil, r.ctx.Err()
	}
	if f.local != nil {
		b, err := r.localSpan(f.local, idx)
		if err == nil {
			return b, nil
		}
		// The local copy went away (its fill ended, the write-back
		// landed) or failed: the tiers or a flight have the chunk.
		f.local, f.ref = nil, r.e.chunk(r.info, idx, wantNow, lookNone)
	}
	if f.ref.data == nil && f.ref.fl == nil {
		// A read-ahead found no room in the flight budget; this chunk is
		// needed now, so it is fetched regardless.
		f.ref = r.e.chunk(r.info, idx, wantNow, lookNone)
	}
	within := r.off - idx*cs
	b, err := f.ref.bytesAt(r.ctx, int(within))
	if err != nil && !f.retried && transient(err) && r.ctx.Err() == nil {
		// The fetch failed in a way that may pass (a dropped connection, a
		// stalled origin): fetch the chunk once more before giving up.
		f.retried = true
		f.ref = r.e.chunk(r.info, idx, wantNow, lookNone)
		b, err = f.ref.bytesAt(r.ctx, int(within))
	}
	if err == io.EOF {
		// The chunk ended before the range did: the origin's object is
		// shorter than its metadata said.
		return nil, io.ErrUnexpectedEOF
	}
	if err != nil {
		return nil, err
	}
	return b[:min(int64(len(b)), r.end-r.off, maxSpan)], nil
}

// localSpan reads the next bytes of the range within chunk idx, at most
// maxSpan, from the local copy that holds the chunk (open), into the
// reader's buffer. A restore that starts the moment its save returns
// reads the saved bytes in place (page cache, usually) instead of copying
// each chunk into a new RAM buffer first: the fill that owns the copy
// does that behind it.
func (r *objectReader) localSpan(open opener, idx int64) ([]byte, error) {
	chunkEnd := min((idx+1)*r.e.opts.ChunkSize, r.info.Size)
	n := min(min(chunkEnd, r.end)-r.off, maxSpan)
	rc, err := open(r.off, n)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	if r.buf == nil {
		r.buf = localBufs.Get().(*[]byte)
	}
	b := (*r.buf)[:n]
	if _, err := io.ReadFull(rc, b); err != nil {
		return nil, err
	}
	return b, nil
}

func (r *objectReader) Read(p []byte) (int, error) {
	b, err := r.span()
	if err != nil {
		return 0, err
	}
	n := copy(p, b)
	r.off += int64(n)
	return n, nil
}

// WriteTo writes the rest of the range to w straight from the cache's
// memory, without copying it through a buffer.
func (r *objectReader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for {
		b, err := r.span()
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
		n, err := w.Write(b)
		r.off += int64(n)
		total += int64(n)
		if err != nil {
			return total, err
		}
	}
}

// Close stops read-ahead lookups; flights already started run on, bounded
// by the fetch timeout, since they fill the cache for other readers.
func (r *objectReader) Close() error {
	r.cancel()
	if !r.closed {
		r.closed = true
		r.e.reading.Add(-1)
		if r.buf != nil {
			localBufs.Put(r.buf)
			r.buf = nil
		}
	}
	return nil
}

// bytesReader is a whole object already in memory as one slice.
type bytesReader struct {
	data []byte
	off  int
}

func (b *bytesReader) Read(p []byte) (int, error) {
	if b.off >= len(b.data) {
		return 0, io.EOF
	}
	n := copy(p, b.data[b.off:])
	b.off += n
	return n, nil
}

// WriteTo writes the rest of the slice to w in one write.
func (b *bytesReader) WriteTo(w io.Writer) (int64, error) {
	if b.off >= len(b.data) {
		return 0, nil
	}
	n, err := w.Write(b.data[b.off:])
	b.off += n
	return int64(n), err
}

func (b *bytesReader) Close() error { return nil }
