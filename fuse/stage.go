// Files being written: a local staging copy per file (an unlinked temp
// file, so any write pattern works and nothing is held in memory), the
// handles that read and write it, and its upload on flush and fsync.
package fuse

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// stage is the local copy of one file open for writing. It lives while
// any handle of its node is open (fileNode.stage points at it) and is
// uploaded whole on every flush or fsync that finds it dirty.
type stage struct {
	// f is unlinked from the staging directory as soon as it is
	// created: it disappears with the last descriptor, crash or not.
	f *os.File
	// size is f's length; written under mu, read without it (getattr
	// must not wait for an upload in progress).
	size atomic.Int64
	// refs counts the open handles; guarded by the node's smu.
	refs int

	mu sync.Mutex // guards dirty and unlinked; serializes writes, truncates and uploads
	// dirty: f differs from the object at the node's key.
	dirty bool
	// unlinked: the file was removed while open; it is never uploaded.
	unlinked bool
}

// newStage creates an empty staging file in dir.
func newStage(dir string) (*stage, error) {
	f, err := os.CreateTemp(dir, "granary-stage-*")
	if err != nil {
		return nil, err
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, err
	}
	return &stage{f: f}, nil
}

// truncateLocked sets the staged length to size.
func (s *stage) truncateLocked(size int64) error {
	if err := s.f.Truncate(size); err != nil {
		return err
	}
	s.size.Store(size)
	s.dirty = true
	return nil
}

// stageNow returns the node's stage, or nil.
func (n *fileNode) stageNow() *stage {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.stage
}

// openStage returns the node's stage with one more reference, creating
// it if needed: empty if trunc, else holding the object's current
// content (downloaded now, so appends and in-place edits work).
func (n *fileNode) openStage(ctx context.Context, trunc bool) (*stage, error) {
	n.smu.Lock()
	defer n.smu.Unlock()
	if s := n.stageNow(); s != nil {
		s.refs++
		if trunc {
			s.mu.Lock()
			err := s.truncateLocked(0)
			s.mu.Unlock()
			if err != nil {
				s.refs--
				return nil, err
			}
		}
		return s, nil
	}
	s, err := newStage(n.fsys.opts.StageDir)
	if err != nil {
		return nil, err
	}
	if trunc {
		s.dirty = true // an emptied or new file is uploaded even if never written
	} else {
		info, err := n.current(ctx)
		var size int64
		if err == nil {
			size, err = n.fsys.cl.download(ctx, n.keyOf(), s.f, info.size)
		}
		if err != nil {
			s.f.Close()
			return nil, err
		}
		s.size.Store(size)
	}
	s.refs = 1
	n.mu.Lock()
	n.stage = s
	n.openETag = "" // the page cache may hold bytes this stage changes
	n.mu.Unlock()
	return s, nil
}

// releaseStage drops one reference to s; the last one closes it.
func (n *fileNode) releaseStage(s *stage) {
	n.smu.Lock()
	defer n.smu.Unlock()
	if s.refs--; s.refs > 0 {
		return
	}
	n.mu.Lock()
	n.stage = nil
	n.openETag = ""
	n.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dirty && !s.unlinked {
		// Flush and fsync upload and report; only writes after the
		// last of them (through a mapping) can be left here.
		n.fsys.log.Warn().Str("key", n.keyOf()).Msg("fuse: staged writes that were not uploaded are dropped")
	}
	s.f.Close()
}

// flushLocked uploads s to the node's key if it is dirty and refreshes
// what the mount caches of the file and its directory. s.mu is held.
func (n *fileNode) flushLocked(ctx context.Context, s *stage) error {
	if !s.dirty || s.unlinked {
		return nil
	}
	key := n.keyOf()
	info, err := n.fsys.cl.put(ctx, key, s.f, s.size.Load())
	if err != nil {
		return err
	}
	s.dirty = false
	n.update(info)
	n.mu.Lock()
	n.openETag = ""
	n.mu.Unlock()
	n.fsys.dirs.drop(parentOf(key))
	return nil
}

// parentOf returns the prefix of the directory holding key.
func parentOf(key string) string {
	return key[:strings.LastIndex(key, "/")+1]
}

// stageHandle is one open descriptor of a staged file. Writes are
// refused by the kernel on descriptors opened read-only.
type stageHandle struct {
	n *fileNode
	s *stage
}

var (
	_ fs.FileReader   = (*stageHandle)(nil)
	_ fs.FileWriter   = (*stageHandle)(nil)
	_ fs.FileFlusher  = (*stageHandle)(nil)
	_ fs.FileFsyncer  = (*stageHandle)(nil)
	_ fs.FileReleaser = (*stageHandle)(nil)
)

// Read reads the staged bytes.
func (h *stageHandle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	n, err := h.s.f.ReadAt(dest, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, h.n.fsys.errno("read", err)
	}
	return fuse.ReadResultData(dest[:n]), 0
}

// Write writes data at off into the staging file.
func (h *stageHandle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	s := h.s
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.f.WriteAt(data, off)
	if end := off + int64(n); end > s.size.Load() {
		s.size.Store(end)
	}
	if n > 0 {
		s.dirty = true
	}
	if err != nil {
		return uint32(n), h.n.fsys.errno("write", err)
	}
	return uint32(n), 0
}

// Flush (every close(2)) uploads the file if it changed and reports a
// failed upload.
func (h *stageHandle) Flush(ctx context.Context) syscall.Errno {
	return h.sync(ctx, "flush")
}

// Fsync uploads the file if it changed and reports a failed upload.
func (h *stageHandle) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	return h.sync(ctx, "fsync")
}

func (h *stageHandle) sync(ctx context.Context, op string) syscall.Errno {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	// Uploads run under the mount's context, not the request's: an
	// interrupted close must not leave half an upload behind it.
	if err := h.n.flushLocked(h.n.fsys.ctx, h.s); err != nil {
		return h.n.fsys.errno(op, err)
	}
	return 0
}

// Release drops the handle's reference to the stage.
func (h *stageHandle) Release(ctx context.Context) syscall.Errno {
	h.n.releaseStage(h.s)
	return 0
}

// staged returns d's files being written, which S3 does not list before
// their first upload.
func (d *dirNode) staged() map[string]dirEntry {
	var m map[string]dirEntry
	for name, c := range d.Children() {
		n, ok := c.Operations().(*fileNode)
		if !ok || n.stageNow() == nil {
			continue
		}
		if m == nil {
			m = map[string]dirEntry{}
		}
		m[name] = dirEntry{name: name}
	}
	return m
}
