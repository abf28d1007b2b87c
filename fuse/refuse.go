// What S3 cannot do, refused with a clear errno, never a silent
// success: EROFS on a read-only mount; otherwise EPERM for node types
// S3 has no notion of (hard links, symlinks, devices) and ENOTSUP for
// extended attributes.
package fuse

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

var (
	_ fs.NodeMknoder       = (*dirNode)(nil)
	_ fs.NodeSymlinker     = (*dirNode)(nil)
	_ fs.NodeLinker        = (*dirNode)(nil)
	_ fs.NodeSetxattrer    = (*dirNode)(nil)
	_ fs.NodeRemovexattrer = (*dirNode)(nil)
	_ fs.NodeSetxattrer    = (*fileNode)(nil)
	_ fs.NodeRemovexattrer = (*fileNode)(nil)
	_ fs.FileWriter        = (*fileHandle)(nil)
)

// refuse returns EROFS on a read-only mount, else unsupported.
func (f *filesys) refuse(unsupported syscall.Errno) syscall.Errno {
	if f.opts.ReadOnly {
		return syscall.EROFS
	}
	return unsupported
}

// Mknod: mknod(2) documents EPERM for a file system that does not
// support the node type; regular files are made by open(O_CREAT).
func (d *dirNode) Mknod(ctx context.Context, name string, mode, dev uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, d.fsys.refuse(syscall.EPERM)
}

// Symlink: symlink(2) documents EPERM for a file system without them.
func (d *dirNode) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, d.fsys.refuse(syscall.EPERM)
}

// Link: link(2) documents EPERM for a file system without hard links.
func (d *dirNode) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, d.fsys.refuse(syscall.EPERM)
}

func (d *dirNode) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	return d.fsys.refuse(syscall.ENOTSUP)
}

func (d *dirNode) Removexattr(ctx context.Context, attr string) syscall.Errno {
	return d.fsys.refuse(syscall.ENOTSUP)
}

func (n *fileNode) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	return n.fsys.refuse(syscall.ENOTSUP)
}

func (n *fileNode) Removexattr(ctx context.Context, attr string) syscall.Errno {
	return n.fsys.refuse(syscall.ENOTSUP)
}

// Write cannot happen on a handle opened read-only (the kernel checks);
// refuse it anyway.
func (h *fileHandle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	return 0, syscall.EBADF
}
