// Chunks lent unread (store.FileLender): a chunk in a segment this
// process wrote is sent from its file by reference, without the read and
// the CRC32C check of Get.
//
// The check exists because nothing is fsynced: after a crash an index
// entry may name bytes that never reached the disk. A segment this
// process created cannot be in that state while it runs: its chunks' bytes
// were written before their entries, and the kernel returns what was
// written (from the page cache, or from the device once written back),
// or an error if the device fails. Segments found at start (recover.go)
// are never lent: their chunks are read and checked, as before.
package disk

import (
	"errors"
	"io"
	"sync"

	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/index"
)

// LendFile lends chunk id where it lies in its segment, if this process
// wrote the segment; store.ErrNotLendable if the chunk is elsewhere (a
// segment found at start, a chunk file: Get reads them), having counted
// no access. With record, the access counts as a Get's.
func (t *Tier) LendFile(id store.ChunkID, record bool) (store.FileChunk, int64, error) {
	if err := t.begin(); err != nil {
		return nil, 0, err
	}
	defer t.end()
	loc, err := t.idx.Lookup(id)
	switch {
	case errors.Is(err, store.ErrNotFound), errors.Is(err, index.ErrMalformed):
		return nil, 0, store.ErrNotFound // a malformed entry: Get drops it
	case err != nil:
		return nil, 0, ioErr("index lookup", err)
	}
	if loc.Kind != index.InSegment {
		return nil, 0, store.ErrNotLendable
	}
	u, written := t.acquireWritten(loc.Unit, record, true)
	switch {
	case !written: // counted by the Get that reads it instead
		return nil, 0, store.ErrNotLendable
	case u == nil:
		return nil, 0, store.ErrNotFound
	}
	if record {
		t.recordGet(id)
	}
	return &lentChunk{t: t, u: u, off: loc.Offset, n: loc.Length}, loc.Length, nil
}

// lentChunk is a lease on n bytes at off in segment u, which it holds a
// reference on: its file stays open until Release, even if the segment
// is evicted meanwhile.
type lentChunk struct {
	t    *Tier
	u    *unit
	off  int64
	n    int64
	once sync.Once
}

func (c *lentChunk) File() (fd uintptr, off int64) { return c.u.f.Fd(), c.off }

// ReadAt reads the chunk's bytes from off, never past its end.
func (c *lentChunk) ReadAt(p []byte, off int64) (int, error) {
	if off >= c.n {
		return 0, io.EOF
	}
	short := int64(len(p)) > c.n-off
	if short {
		p = p[:c.n-off]
	}
	n, err := c.u.f.ReadAt(p, c.off+off)
	if err == nil && short {
		err = io.EOF
	}
	return n, err
}

func (c *lentChunk) Release() { c.once.Do(func() { c.t.release(c.u) }) }
