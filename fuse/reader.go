// Reads of an open file: ranged GETs pinned to the ETag seen at open,
// with an adaptive read-ahead whose buffers come from the global budget.
package fuse

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

const (
	// seqSlack: a read starting this close to the end of the current
	// sequential run (either side: the kernel sends its own read-ahead
	// in parallel, slightly out of order) continues the run.
	seqSlack = 1 << 20
	// initialWindow and maxWindow bound the read-ahead of a sequential
	// reader; it doubles each time the reader reaches a chunk it
	// fetched ahead.
	initialWindow = 1 << 20
	maxWindow     = 32 << 20
	// minChunk is the smallest read-ahead GET.
	minChunk = 1 << 20
	// budgetWait is the longest a read-ahead chunk waits for memory.
	// Past it the chunk is given up and its reader reads directly, so
	// that budget held by idle handles can slow readers but never stop
	// them.
	budgetWait = 5 * time.Second
)

// errSkipped marks a read-ahead chunk given up for want of memory.
var errSkipped = errors.New("read-ahead skipped: memory budget exhausted")

// chunk is one read-ahead GET of [off, end) of the pinned version.
type chunk struct {
	off, end int64
	done     chan struct{} // closed once buf or err is set
	buf      *buffer       // the bytes, charged to the budget; nil on error
	err      error
	cancel   context.CancelFunc // cancels the fetch
	// refs counts the holders: the handle's list, the fetch, and each
	// read copying out. The last one out returns buf to the budget.
	refs    atomic.Int32
	touched bool // a read has reached it; guarded by fileHandle.mu
}

// fileHandle is one open file: the version pinned at open and its
// read-ahead state.
type fileHandle struct {
	fsys  *filesys
	key   string
	etag  string
	size  int64
	mtime time.Time
	// ctx ends at release; every fetch of the handle runs under it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // running fetches

	mu sync.Mutex // guards the fields below
	// chunks are sorted by offset and do not overlap; all end at or
	// before raEnd.
	chunks []*chunk
	seqEnd int64 // end of the current sequential run; -1 before any read
	window int64 // read-ahead bytes; 0 while reads look random
	raEnd  int64 // where the next read-ahead chunk starts
}

var (
	_ fs.FileReader   = (*fileHandle)(nil)
	_ fs.FileReleaser = (*fileHandle)(nil)
)

func newFileHandle(f *filesys, key string, info objInfo) *fileHandle {
	h := &fileHandle{fsys: f, key: key, etag: info.etag, size: info.size, mtime: info.mtime, seqEnd: -1}
	h.ctx, h.cancel = context.WithCancel(f.ctx)
	return h
}

// segment is a piece of one read: served from c, or read directly from
// S3 into the caller's buffer if c is nil.
type segment struct {
	c        *chunk
	from, to int64
}

// Read fills dest from offset off, short only at the end of the pinned
// version.
func (h *fileHandle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if off >= h.size || len(dest) == 0 {
		return fuse.ReadResultData(nil), 0
	}
	end := min(off+int64(len(dest)), h.size)
	dest = dest[:end-off]
	segs := h.plan(off, end)
	defer func() {
		for _, s := range segs {
			if s.c != nil {
				h.unref(s.c)
			}
		}
	}()
	for _, s := range segs {
		part := dest[s.from-off : s.to-off]
		if s.c != nil {
			select {
			case <-s.c.done:
			case <-ctx.Done():
				return nil, syscall.EINTR
			}
			if s.c.err == nil {
				copy(part, s.c.buf.b[s.from-s.c.off:s.to-s.c.off])
				continue
			}
			h.drop(s.c)
		}
		if err := h.fsys.cl.getRange(ctx, h.key, h.etag, s.from, part); err != nil {
			return nil, h.fsys.errno("read", err)
		}
	}
	return fuse.ReadResultData(dest), 0
}

// plan updates the access pattern with a read of [off, end), splits the
// read into segments (each chunk in one is referenced for the caller)
// and starts the read-ahead a sequential run calls for.
func (h *fileHandle) plan(off, end int64) []segment {
	h.mu.Lock()
	defer h.mu.Unlock()
	seq := h.seqEnd >= 0 && off >= h.seqEnd-seqSlack && off <= h.seqEnd+seqSlack
	if seq {
		h.window = max(h.window, initialWindow)
		h.seqEnd = max(h.seqEnd, end)
		h.dropBeforeLocked(off)
	} else {
		// A jump: whatever was fetched ahead is of no use.
		h.dropBeforeLocked(h.size + 1)
		h.window, h.raEnd, h.seqEnd = 0, 0, end
	}
	var segs []segment
	for pos := off; pos < end; {
		c, next := h.findLocked(pos)
		if c == nil {
			to := min(end, next)
			if n := len(segs); n > 0 && segs[n-1].c == nil {
				segs[n-1].to = to
			} else {
				segs = append(segs, segment{from: pos, to: to})
			}
			pos = to
			continue
		}
		c.refs.Add(1)
		if !c.touched {
			c.touched = true
			h.window = min(2*h.window, maxWindow)
		}
		to := min(end, c.end)
		segs = append(segs, segment{c: c, from: pos, to: to})
		pos = to
	}
	if seq {
		h.readAheadLocked(end)
	}
	return segs
}

// findLocked returns the chunk holding pos, or nil and the offset of the
// next chunk after pos (the end of the file if none).
func (h *fileHandle) findLocked(pos int64) (*chunk, int64) {
	for _, c := range h.chunks {
		if pos < c.off {
			return nil, c.off
		}
		if pos < c.end {
			return c, 0
		}
	}
	return nil, h.size
}

// readAheadLocked starts chunks until the window past end is covered.
// The first chunk ahead of the reader waits for memory if it must (the
// reader will wait for it: backpressure); further ones are started only
// if memory is free now, so a busy budget shrinks every window instead
// of queueing read-ahead nobody waits for yet.
func (h *fileHandle) readAheadLocked(end int64) {
	h.raEnd = max(h.raEnd, end)
	maxBuf := int64(h.fsys.budget.maxBuffer())
	size := min(max(minChunk, h.window/2), maxBuf)
	target := min(h.size, end+h.window)
	ahead := false
	for _, c := range h.chunks {
		ahead = ahead || c.end > end
	}
	for h.raEnd < target {
		n := min(size, h.size-h.raEnd)
		var buf *buffer
		if ahead {
			if buf = h.fsys.budget.tryGet(int(n)); buf == nil {
				return
			}
		}
		h.startLocked(h.raEnd, h.raEnd+n, buf)
		h.raEnd += n
		ahead = true
	}
}

// startLocked starts fetching the chunk [off, end) into buf, or into a
// buffer it waits for if buf is nil.
func (h *fileHandle) startLocked(off, end int64, buf *buffer) {
	ctx, cancel := context.WithCancel(h.ctx)
	c := &chunk{off: off, end: end, done: make(chan struct{}), cancel: cancel}
	c.refs.Store(2) // the list and the fetch
	h.chunks = append(h.chunks, c)
	h.wg.Add(1)
	go h.fetch(ctx, c, buf)
}

// fetch GETs the chunk into buf, first waiting for memory (at most
// budgetWait) if buf is nil.
func (h *fileHandle) fetch(ctx context.Context, c *chunk, buf *buffer) {
	defer h.wg.Done()
	defer c.cancel()
	var err error
	if buf == nil {
		wctx, cancel := context.WithTimeout(ctx, budgetWait)
		buf, err = h.fsys.budget.get(wctx, int(c.end-c.off))
		cancel()
	}
	if err != nil {
		h.fsys.budget.skipped.Add(1)
		c.err = errSkipped
	} else if err = h.fsys.cl.getRange(ctx, h.key, h.etag, c.off, buf.b); err != nil {
		h.fsys.budget.put(buf)
		c.err = err
	} else {
		c.buf = buf
	}
	close(c.done)
	h.unref(c)
}

// unref drops one reference to c; the last returns its memory.
func (h *fileHandle) unref(c *chunk) {
	if c.refs.Add(-1) == 0 && c.buf != nil {
		h.fsys.budget.put(c.buf)
		c.buf = nil
	}
}

// drop removes c from the list if it is still there.
func (h *fileHandle) drop(c *chunk) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, x := range h.chunks {
		if x == c {
			h.chunks = append(h.chunks[:i], h.chunks[i+1:]...)
			c.cancel()
			h.unref(c)
			return
		}
	}
}

// dropBeforeLocked removes the chunks that end at or before pos,
// cancelling their fetches.
func (h *fileHandle) dropBeforeLocked(pos int64) {
	kept := h.chunks[:0]
	for _, c := range h.chunks {
		if c.end <= pos {
			c.cancel()
			h.unref(c)
			continue
		}
		kept = append(kept, c)
	}
	clear(h.chunks[len(kept):])
	h.chunks = kept
}

// Release cancels the handle's fetches, waits for them and returns all
// its memory (reads still copying return theirs as they finish).
func (h *fileHandle) Release(ctx context.Context) syscall.Errno {
	h.mu.Lock()
	h.dropBeforeLocked(h.size + 1)
	h.mu.Unlock()
	h.cancel()
	h.wg.Wait()
	return 0
}
