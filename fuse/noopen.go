// Zero-message opens for read-only mounts: the kernel opens, reads from
// its page cache and closes a file without a round trip to us, and the
// reads that do reach us share one reader per file version.
package fuse

import (
	"context"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// sharedIdle is how long a file's shared reader keeps its read-ahead
// after the last read before giving its memory back.
const sharedIdle = 5 * time.Second

// On a read-only mount, Open answers ENOSYS: the kernel then stops
// sending OPEN and RELEASE for files altogether (FUSE_NO_OPEN_SUPPORT),
// keeps every file's page cache across opens, and sends reads without
// a handle. Flush answers ENOSYS too, so close sends nothing either.
//
// What a handle pinned per open, the node pins instead: a read-only
// mount's file node is one version of its object (its ETag never
// changes), and a lookup that finds another version makes a new node.
// A descriptor opened on the old node keeps reading the old version (or
// gets EIO once the origin no longer has it), new opens get the new
// node with a page cache of its own, and no descriptor ever sees two
// versions.
var (
	_ fs.NodeReader      = (*fileNode)(nil)
	_ fs.NodeFlusher     = (*fileNode)(nil)
	_ fs.NodeOnForgetter = (*fileNode)(nil)
)

// sharedReader is the read-ahead state of a node's handle-less reads.
type sharedReader struct {
	mu    sync.Mutex // guards the fields below
	h     *fileHandle
	users int         // reads in progress on h
	last  time.Time   // when the last read ended
	timer *time.Timer // pending idle check, or nil
}

// Read serves a read on a handle, or a handle-less one (read-only
// mount) through the node's shared reader.
func (n *fileNode) Read(ctx context.Context, fh fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if r, ok := fh.(fs.FileReader); ok {
		return r.Read(ctx, dest, off)
	}
	n.mu.Lock()
	key, info := n.key, n.info
	n.mu.Unlock()
	h := n.shared.acquire(n.fsys, key, info)
	defer n.shared.release()
	return h.Read(ctx, dest, off)
}

// Flush reports a staged file's upload; without a handle there is
// nothing to flush, and a read-only mount says so once for all files.
func (n *fileNode) Flush(ctx context.Context, fh fs.FileHandle) syscall.Errno {
	if f, ok := fh.(fs.FileFlusher); ok {
		return f.Flush(ctx)
	}
	if n.fsys.opts.ReadOnly {
		return syscall.ENOSYS
	}
	return 0
}

// OnForget releases the shared reader once the kernel has forgotten the
// node (no descriptor can read it any more).
func (n *fileNode) OnForget() { n.shared.close() }

// acquire returns the shared handle, made for key at info if there is
// none, for one read; release ends the read.
func (s *sharedReader) acquire(f *filesys, key string, info objInfo) *fileHandle {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.h == nil {
		s.h = newFileHandle(f, key, info)
	}
	s.users++
	return s.h
}

func (s *sharedReader) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users--
	s.last = time.Now()
	if s.users == 0 && s.timer == nil {
		s.timer = time.AfterFunc(sharedIdle, s.idle)
	}
}

// idle closes the shared handle if no read has used it for sharedIdle,
// else checks again later. A later read makes a new handle: only the
// access pattern is lost.
func (s *sharedReader) idle() {
	s.mu.Lock()
	s.timer = nil
	if s.users > 0 {
		s.mu.Unlock()
		return // release re-arms
	}
	if wait := sharedIdle - time.Since(s.last); wait > 0 {
		s.timer = time.AfterFunc(wait, s.idle)
		s.mu.Unlock()
		return
	}
	h := s.h
	s.h = nil
	s.mu.Unlock()
	if h != nil {
		h.Release(context.Background())
	}
}

// close releases the shared handle now if no read is using it.
func (s *sharedReader) close() {
	s.mu.Lock()
	if s.users > 0 {
		s.mu.Unlock()
		return // the idle check releases it
	}
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	h := s.h
	s.h = nil
	s.mu.Unlock()
	if h != nil {
		h.Release(context.Background())
	}
}
