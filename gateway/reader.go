// The object reader: streams a byte range chunk by chunk, with the next
// chunks of the range already being looked up or fetched (read-ahead).
package gateway

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"

	"github.com/granary-dev/granary/store"
)

// future is a chunk being located: ready is closed once ref is set, or
// local, when the chunk is read in place from a copy on this node's disk
// (see localSpan and sendLocal).
type future struct {
	idx     int64
	ready   chan struct{}
	ref     chunkRef
	local   opener
	retried bool // a transient failure was retried; set by the reader only
	// paid is the working memory the future holds for its chunk (0 when
	// holding it is free: chunkRef.free); set by the lookup goroutine
	// until ready is closed, then by the reader only.
	paid int64
	// holders counts who must let go of the future before paid is given
	// back: the reader and, while it runs, the lookup goroutine.
	holders atomic.Int32
}

// letGo is one holder of f letting go; the last gives back what f paid,
// through the chunk's flight if it is still being fetched (hand), and
// lets go of the flight (its bytes are sent or no longer wanted).
func (e *Engine) letGo(f *future) {
	if f.holders.Add(-1) != 0 {
		return
	}
	switch {
	case f.paid == 0:
	case f.ref.fl != nil:
		e.hand(f.ref.fl, f.paid)
	default:
		e.mem.give(f.paid)
	}
	f.ref.release()
}

// objectReader yields bytes [off, end) of one object version. Invariants:
// window holds futures for consecutive chunk indexes starting at the chunk
// that contains off, at most ReadAhead+1 of them, none past the range;
// each is paid for in the working memory or free to hold (budget.go).
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
	first chunkRef
	// asked is what Get's fast path asked the tiers already of chunk
	// askedIdx (-1: none), so the window's walk of it only peeks.
	askedIdx int64
	asked    asked
	closed   bool    // Close ran (or admit refused): not counted in e.reading
	buf      *[]byte // from localBufs, for localSpan; returned by Close
	// prepaid is working memory admit took for the range's first chunk,
	// until fill hands it to that chunk's future (or Close gives it back).
	prepaid int64
}

// localBufs holds maxSpan-sized buffers that local reads land in: reused,
// so a restore right after a save touches no fresh memory (localSpan).
var localBufs = sync.Pool{New: func() any { b := make([]byte, maxSpan); return &b }}

func (e *Engine) newReader(ctx context.Context, info store.ObjectInfo, off, n int64) *objectReader {
	ctx, cancel := context.WithCancel(ctx)
	r := &objectReader{e: e, ctx: ctx, cancel: cancel, info: info, off: off, end: off + n, askedIdx: -1}
	r.next = off / e.opts.ChunkSize
	r.last = (off + n - 1) / e.opts.ChunkSize
	return r
}

// admit takes the working memory for the range's first chunk before the
// answer starts, unless holding it costs nothing (costsNothing; peek
// false: RAM was just asked and had not), waiting at most AdmitWait: a
// read that finds no room fails with ErrBusy while it can still be
// answered 503.
func (r *objectReader) admit(peek bool) error {
	idx := r.off / r.e.opts.ChunkSize
	switch {
	case idx == 0 && r.first.fl != nil:
		if r.e.inAir(r.first.fl) {
			return nil
		}
	case peek && r.e.costsNothing(r.e.chunkID(r.info, idx)):
		return nil
	}
	n := r.e.chunkLen(r.info.Size, idx)
	if err := r.e.mem.take(r.ctx, n, r.e.opts.AdmitWait); err != nil {
		return err
	}
	r.prepaid = n
	return nil
}

// refuse ends a reader that admit refused: it holds nothing yet but
// first.
func (r *objectReader) refuse() {
	r.cancel()
	r.closed = true
	r.first.release()
	r.first = chunkRef{}
}

// fill tops the window up to ReadAhead chunks beyond the current one,
// each walking its plan (forGet). What the walk finds before its pause
// (the metadata load's chunk 0, RAM) resolves at once; the rest resolves
// on a goroutine, since a disk read or the start of a fetch should not
// hold up the chunk being streamed. At the pause the chunk is paid for
// (see budget.go): the chunk read now by waiting for room (at most
// FetchTimeout), a read-ahead only if there is room, else the window ends
// there for now.
func (r *objectReader) fill() error {
	for r.next <= r.last && len(r.window) <= r.e.opts.ReadAhead {
		f := &future{idx: r.next, ready: make(chan struct{})}
		f.holders.Store(1)
		n := r.e.chunkLen(r.info.Size, f.idx)
		w := newWalker(forGet, r.e.chunkID(r.info, f.idx), n, wantNow)
		w.paid, w.lends = true, true // letGo releases the ref
		if f.idx == r.askedIdx {
			w.asked = r.asked
		}
		if f.idx == 0 {
			w.first, r.first = r.first, chunkRef{} // read it, never again
		}
		if got, ok := r.e.walk(&w); ok {
			f.ref = got.ref
			if got.from == rungFirst {
				f.paid, r.prepaid = r.prepaid, 0
			}
			close(f.ready)
			r.push(f)
			continue
		}
		switch {
		case r.prepaid > 0:
			f.paid, r.prepaid = r.prepaid, 0
		case len(r.window) == 0: // the chunk read now
			if err := r.e.mem.take(r.ctx, n, r.e.opts.FetchTimeout); err != nil {
				return err
			}
			f.paid = n
		case r.e.mem.tryTake(n):
			f.paid, w.want = n, wantAhead
		default:
			return nil
		}
		f.holders.Store(2)
		r.push(f)
		if w.inline = r.wholeNow(f.idx); w.inline {
			r.resolve(f, w.paused()) // nothing to send until it is here
			continue
		}
		go r.resolve(f, w.paused())
	}
	return nil
}

// wholeNow reports whether chunk idx is read now, and what is left of the
// range in it runs to the chunk's end and is under maxSpan: span waits
// for the chunk's last byte before it sends one, so the reader waits for
// the whole chunk (a flight fills it from its start) with nothing else
// to do meanwhile, and its lookup and the flight it may start run on its
// goroutine. A range that ends earlier in the chunk is sent as soon as
// its own bytes are in (the first 100 KiB of an 8 MiB chunk from a slow
// origin), so its flight keeps a goroutine of its own.
func (r *objectReader) wholeNow(idx int64) bool {
	end := min(r.info.Size, (idx+1)*r.e.opts.ChunkSize)
	return len(r.window) == 1 && r.end == end && end-max(r.off, idx*r.e.opts.ChunkSize) < maxSpan
}

// resolve goes on with f's walk from its pause p, on the goroutine fill
// starts, and resolves f. The walk is made again from p rather than
// carried: a chunk found in RAM puts no walker on the heap.
func (r *objectReader) resolve(f *future, p pause) {
	w := p.walker(forGet, r.e.chunkID(r.info, f.idx), r.e.chunkLen(r.info.Size, f.idx))
	got, _ := r.e.walk(&w) // its plan ends at the flight rung
	f.ref, f.local = got.ref, got.local
	if f.ref.free { // RAM, or a flight in the air, has it
		r.e.mem.give(f.paid)
		f.paid = 0
	}
	close(f.ready)
	r.e.letGo(f)
}

// push appends f to the window.
func (r *objectReader) push(f *future) {
	r.window = append(r.window, f)
	r.next++
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
	f, err := r.head()
	if err != nil {
		return nil, err
	}
	return r.spanOf(f)
}

// head returns the future of the chunk that holds r.off, located (ready),
// with the window topped up behind it: io.EOF once the range is sent.
func (r *objectReader) head() (*future, error) {
	if r.off >= r.end {
		return nil, io.EOF
	}
	idx := r.off / r.e.opts.ChunkSize
	for len(r.window) > 0 && r.window[0].idx < idx {
		r.e.letGo(r.window[0]) // sent: its bytes are no longer written
		r.window = r.window[1:]
	}
	if err := r.fill(); err != nil {
		return nil, err
	}
	f := r.window[0]
	select {
	case <-f.ready:
		return f, nil
	case <-r.ctx.Done():
		return nil, r.ctx.Err()
	}
}

// spanOf returns the next bytes of the range from f, the window's head
// (see span).
func (r *objectReader) spanOf(f *future) ([]byte, error) {
	cs := r.e.opts.ChunkSize
	idx := f.idx
	if f.local != nil {
		b, err := r.localSpan(f.local, idx)
		if err == nil {
			return b, nil
		}
		if err := r.dropLocal(f); err != nil {
			return nil, err
		}
	}
	within := r.off - idx*cs
	if last := min(r.end, (idx+1)*cs) - 1 - idx*cs; last > within && last-within < maxSpan {
		// A short rest of the range leaves in one write once it is all
		// here, not a frame at a time as it arrives (a failure shows in
		// the read below).
		f.ref.bytesAt(r.ctx, int(last)) //nolint:errcheck
	}
	b, err := f.ref.bytesAt(r.ctx, int(within))
	if err != nil && !f.retried && transient(err) && r.ctx.Err() == nil {
		// The fetch failed in a way that may pass (a dropped connection, a
		// stalled origin): fetch the chunk once more before giving up.
		f.retried = true
		if err = r.refetch(f, idx); err == nil {
			b, err = f.ref.bytesAt(r.ctx, int(within))
		}
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

// refetch looks chunk idx up again for f, whose lookup is over (ready),
// paying for it first if f holds nothing (it was free).
func (r *objectReader) refetch(f *future, idx int64) error {
	if f.paid == 0 {
		n := r.e.chunkLen(r.info.Size, idx)
		if err := r.e.mem.take(r.ctx, n, r.e.opts.FetchTimeout); err != nil {
			return err
		}
		f.paid = n
	}
	w := newWalker(forRetry, r.e.chunkID(r.info, idx), r.e.chunkLen(r.info.Size, idx), wantNow)
	w.paid, w.lends = true, true
	got, _ := r.e.walk(&w) // its plan ends at the flight rung
	release(f.ref.lease)   // none of its bytes is sent any more
	f.ref = got.ref
	if f.ref.free {
		r.e.mem.give(f.paid)
		f.paid = 0
	}
	return nil
}

// dropLocal turns f from the local copy it was to be read from to the
// tiers or a flight: the copy went away (its fill ended, the write-back
// landed) or failed.
func (r *objectReader) dropLocal(f *future) error {
	f.local = nil
	return r.refetch(f, f.idx)
}

// localLen is how many bytes the next span from a local copy of chunk idx
// holds: the rest of the range within the chunk, at most maxSpan.
func (r *objectReader) localLen(idx int64) int64 {
	chunkEnd := min((idx+1)*r.e.opts.ChunkSize, r.info.Size)
	return min(min(chunkEnd, r.end)-r.off, maxSpan)
}

// localSpan reads the next bytes of the range within chunk idx from the
// local copy that holds the chunk (open), into the reader's buffer. A
// restore that starts the moment its save returns reads the saved bytes
// in place (page cache, usually) instead of copying each chunk into a
// new RAM buffer first: the fill that owns the copy does that behind it.
// Where the body's writer takes file spans, sendLocal sends them by
// reference instead.
func (r *objectReader) localSpan(open opener, idx int64) ([]byte, error) {
	n := r.localLen(idx)
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

// sendLocal sends the next bytes of the range from the local copy that
// holds f's chunk, by reference from its file, where fw takes them. done
// reports whether it sent them, or failed writing them; else nothing was
// written and the caller reads them (spanOf), which also deals with a
// copy that went away.
func (r *objectReader) sendLocal(fw FileWriter, f *future) (n int64, done bool, err error) {
	rc, err := f.local(r.off, r.localLen(f.idx))
	if err != nil {
		return 0, false, nil
	}
	defer rc.Close()
	fs, ok := rc.(store.FileSections)
	if !ok {
		return 0, false, nil
	}
	fd, at, m, err := fs.NextSection(maxSpan)
	if err != nil {
		return 0, false, nil
	}
	n, err = fw.WriteFile(fd, at, int(m))
	if errors.Is(err, errors.ErrUnsupported) {
		return 0, false, nil
	}
	return n, true, err
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
// memory, without copying it through a buffer; where w is a FileWriter,
// the spans that lie in a file (RAM's arena, a local copy) by reference.
func (r *objectReader) WriteTo(w io.Writer) (int64, error) {
	fw, _ := w.(FileWriter)
	var total int64
	for {
		n, err := r.sendNext(w, fw)
		r.off += n
		total += n
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// sendNext sends the next span of the range to w: from a local copy's
// file or RAM's arena by reference where fw (w, or nil) takes it, else by
// copy; io.EOF once the range is sent.
func (r *objectReader) sendNext(w io.Writer, fw FileWriter) (int64, error) {
	f, err := r.head()
	if err != nil {
		return 0, err
	}
	if fw != nil && f.local != nil {
		if n, done, err := r.sendLocal(fw, f); done {
			return n, err
		}
	}
	b, err := r.spanOf(f)
	if err != nil {
		return 0, err
	}
	return r.send(w, fw, b)
}

// send writes b, the span at r.off, to w: from the file it lies in by
// reference where fw (w, or nil) takes it, else by copy.
func (r *objectReader) send(w io.Writer, fw FileWriter, b []byte) (int64, error) {
	if fw != nil {
		if fd, at, ok := r.spanFile(); ok {
			n, err := fw.WriteFile(fd, at, len(b))
			if !errors.Is(err, errors.ErrUnsupported) {
				return n, err
			}
		}
	}
	n, err := w.Write(b)
	return int64(n), err
}

// spanFile returns where the span at r.off lies in a file, if it does:
// a chunk lent from RAM's arena, not a flight's buffer or a local copy
// read into the reader's own.
func (r *objectReader) spanFile() (fd uintptr, at int64, ok bool) {
	f := r.window[0]
	if f.local != nil || f.ref.fl != nil || f.ref.lease == nil {
		return 0, 0, false
	}
	return leaseFile(f.ref.lease, r.off-f.idx*r.e.opts.ChunkSize)
}

// Close stops read-ahead lookups; flights already started run on, bounded
// by the fetch timeout, since they fill the cache for other readers.
func (r *objectReader) Close() error {
	r.cancel()
	if !r.closed {
		r.closed = true
		r.e.reading.Add(-1)
		for _, f := range r.window {
			r.e.letGo(f)
		}
		r.window = nil
		r.first.release()
		r.first = chunkRef{}
		r.e.mem.give(r.prepaid)
		r.prepaid = 0
		if r.buf != nil {
			localBufs.Put(r.buf)
			r.buf = nil
		}
	}
	return nil
}

// bytesReader is a whole object already in memory as one slice, lent
// by a tier under lease (nil: none), which Close releases.
type bytesReader struct {
	data  []byte
	off   int
	lease store.Lease
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

// Close releases the lease on the bytes: they are not to be read again.
func (b *bytesReader) Close() error {
	if b.lease != nil {
		b.lease.Release()
		b.lease, b.data = nil, nil
	}
	return nil
}
