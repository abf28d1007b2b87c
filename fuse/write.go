// The namespace changes of a writable mount: create, mkdir, unlink,
// rmdir, rename of files, and setattr (truncate; times accepted; owner
// and mode refused). A read-only mount refuses all of them with EROFS.
package fuse

import (
	"context"
	"errors"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

var (
	_ fs.NodeCreater   = (*dirNode)(nil)
	_ fs.NodeMkdirer   = (*dirNode)(nil)
	_ fs.NodeUnlinker  = (*dirNode)(nil)
	_ fs.NodeRmdirer   = (*dirNode)(nil)
	_ fs.NodeRenamer   = (*dirNode)(nil)
	_ fs.NodeSetattrer = (*dirNode)(nil)
	_ fs.NodeSetattrer = (*fileNode)(nil)
)

// Create makes a new, empty file open for writing. Nothing reaches S3
// before the first flush, which uploads it even if nothing was written.
func (d *dirNode) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	if d.fsys.opts.ReadOnly {
		return nil, nil, 0, syscall.EROFS
	}
	if !validName(name) {
		return nil, nil, 0, syscall.EINVAL
	}
	d.fsys.dirs.drop(d.prefix)
	ch := d.child(ctx, name, false, objInfo{mtime: time.Now()}, out)
	n := ch.Operations().(*fileNode)
	s, err := n.openStage(ctx, true)
	if err != nil {
		return nil, nil, 0, d.fsys.errno("create", err)
	}
	return ch, &stageHandle{n: n, s: s}, 0, 0
}

// Mkdir creates the folder marker "prefix/name/".
func (d *dirNode) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if d.fsys.opts.ReadOnly {
		return nil, syscall.EROFS
	}
	if !validName(name) {
		return nil, syscall.EINVAL
	}
	if _, err := d.fsys.cl.head(ctx, d.prefix+name); err == nil {
		return nil, syscall.EEXIST // an object of that name
	} else if !errors.Is(err, errNotFound) {
		return nil, d.fsys.errno("mkdir", err)
	}
	if err := d.fsys.cl.putMarker(ctx, d.prefix+name+"/"); err != nil {
		return nil, d.fsys.errno("mkdir", err)
	}
	d.fsys.dirs.drop(d.prefix)
	return d.child(ctx, name, true, objInfo{}, out), 0
}

// Unlink deletes the object. A file still open for writing is never
// uploaded after it (POSIX: its data goes with the last descriptor).
func (d *dirNode) Unlink(ctx context.Context, name string) syscall.Errno {
	if d.fsys.opts.ReadOnly {
		return syscall.EROFS
	}
	key := d.prefix + name
	staged := false
	if n, ok := d.childFile(name); ok {
		staged = n.markUnlinked()
		d.fsys.ids.unlinked(n.StableAttr().Ino)
	}
	if _, err := d.fsys.cl.head(ctx, key); err != nil {
		if errors.Is(err, errNotFound) && staged {
			return 0 // created here, never uploaded
		}
		return d.fsys.errno("unlink", err)
	}
	if err := d.fsys.cl.remove(ctx, key); err != nil {
		return d.fsys.errno("unlink", err)
	}
	d.fsys.dirs.drop(d.prefix)
	return 0
}

// childFile returns the file node the kernel knows as name in d.
func (d *dirNode) childFile(name string) (*fileNode, bool) {
	c := d.GetChild(name)
	if c == nil {
		return nil, false
	}
	n, ok := c.Operations().(*fileNode)
	return n, ok
}

// markUnlinked stops the node's stage, if any, from being uploaded and
// reports whether there was one.
func (n *fileNode) markUnlinked() bool {
	n.smu.Lock()
	defer n.smu.Unlock()
	s := n.stageNow()
	if s == nil {
		return false
	}
	s.mu.Lock()
	s.unlinked = true
	s.mu.Unlock()
	return true
}

// Rmdir deletes the folder marker of an empty directory.
func (d *dirNode) Rmdir(ctx context.Context, name string) syscall.Errno {
	if d.fsys.opts.ReadOnly {
		return syscall.EROFS
	}
	prefix := d.prefix + name + "/"
	empty, err := d.fsys.cl.emptyPrefix(ctx, prefix)
	if err != nil {
		return d.fsys.errno("rmdir", err)
	}
	if !empty {
		return syscall.ENOTEMPTY
	}
	if err := d.fsys.cl.remove(ctx, prefix); err != nil {
		return d.fsys.errno("rmdir", err)
	}
	d.fsys.dirs.drop(d.prefix)
	d.fsys.dirs.drop(prefix)
	return 0
}

// Attribute changes S3 can express. There are no owners or modes in S3:
// chmod and chown to anything but what the mount shows fail with
// ENOTSUP. There are no settable times either: S3 stamps an object when
// it is written, so utimens (touch, cp -p) succeeds without effect; this
// is the documented behaviour, and the only silent one.
const (
	setOwner = fuse.FATTR_MODE | fuse.FATTR_UID | fuse.FATTR_GID
	setTimes = fuse.FATTR_ATIME | fuse.FATTR_MTIME | fuse.FATTR_ATIME_NOW |
		fuse.FATTR_MTIME_NOW | fuse.FATTR_CTIME
)

// changesAttrs reports whether a SETATTR asks for any change (rather
// than only naming a handle or lock owner).
func changesAttrs(in *fuse.SetAttrIn) bool {
	return in.Valid&(setOwner|setTimes|fuse.FATTR_SIZE|fuse.FATTR_KILL_SUIDGID) != 0
}

// ownerChange reports whether in asks for a mode, uid or gid other than
// what the mount shows (mode is the permission bits shown, perm).
func (f *filesys) ownerChange(in *fuse.SetAttrIn, perm uint32) bool {
	return in.Valid&fuse.FATTR_MODE != 0 && in.Mode&0o7777 != perm ||
		in.Valid&fuse.FATTR_UID != 0 && in.Uid != f.opts.UID ||
		in.Valid&fuse.FATTR_GID != 0 && in.Gid != f.opts.GID
}

func (d *dirNode) Setattr(ctx context.Context, fh fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	switch {
	case d.fsys.opts.ReadOnly && changesAttrs(in):
		return syscall.EROFS
	case in.Valid&fuse.FATTR_SIZE != 0:
		return syscall.EISDIR
	case d.fsys.ownerChange(in, uint32(d.fsys.opts.DirMode.Perm())):
		return syscall.ENOTSUP
	}
	return d.Getattr(ctx, fh, out)
}

// Setattr truncates (the stage of a file open for writing; otherwise the
// object, through a stage of its own, uploaded at once).
func (n *fileNode) Setattr(ctx context.Context, fh fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	switch {
	case n.fsys.opts.ReadOnly && changesAttrs(in):
		return syscall.EROFS
	case n.fsys.ownerChange(in, uint32(n.fsys.opts.FileMode.Perm())):
		return syscall.ENOTSUP
	}
	if size, ok := in.GetSize(); ok {
		_, open := fh.(*stageHandle)
		if err := n.truncate(ctx, int64(size), !open); err != nil {
			return n.fsys.errno("truncate", err)
		}
	}
	return n.Getattr(ctx, fh, out)
}

// truncate sets the file's length to size, and uploads the file at once
// if upload (a truncate(2) of a path rather than of a descriptor, whose
// close uploads).
func (n *fileNode) truncate(ctx context.Context, size int64, upload bool) error {
	s, err := n.openStage(ctx, size == 0)
	if err != nil {
		return err
	}
	defer n.releaseStage(s)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.truncateLocked(size); err != nil {
		return err
	}
	if !upload {
		return nil
	}
	return n.flushLocked(n.fsys.ctx, s)
}
