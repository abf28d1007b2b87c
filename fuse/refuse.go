// Every mutating operation, refused with EROFS. The write path (create,
// write, rename, unlink, mkdir, rmdir) comes next and will replace these
// for mounts without Options.ReadOnly; until then a mount is read-only
// whatever its options say, and says so with EROFS, never a silent
// success.
package fuse

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

var (
	_ fs.NodeCreater       = (*dirNode)(nil)
	_ fs.NodeMkdirer       = (*dirNode)(nil)
	_ fs.NodeMknoder       = (*dirNode)(nil)
	_ fs.NodeUnlinker      = (*dirNode)(nil)
	_ fs.NodeRmdirer       = (*dirNode)(nil)
	_ fs.NodeRenamer       = (*dirNode)(nil)
	_ fs.NodeSymlinker     = (*dirNode)(nil)
	_ fs.NodeLinker        = (*dirNode)(nil)
	_ fs.NodeSetattrer     = (*dirNode)(nil)
	_ fs.NodeSetxattrer    = (*dirNode)(nil)
	_ fs.NodeRemovexattrer = (*dirNode)(nil)
	_ fs.NodeSetattrer     = (*fileNode)(nil)
	_ fs.NodeSetxattrer    = (*fileNode)(nil)
	_ fs.NodeRemovexattrer = (*fileNode)(nil)
	_ fs.FileWriter        = (*fileHandle)(nil)
)

func (d *dirNode) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	return nil, nil, 0, syscall.EROFS
}

func (d *dirNode) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EROFS
}

func (d *dirNode) Mknod(ctx context.Context, name string, mode, dev uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EROFS
}

func (d *dirNode) Unlink(ctx context.Context, name string) syscall.Errno { return syscall.EROFS }

func (d *dirNode) Rmdir(ctx context.Context, name string) syscall.Errno { return syscall.EROFS }

func (d *dirNode) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	return syscall.EROFS
}

func (d *dirNode) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EROFS
}

func (d *dirNode) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EROFS
}

// changesAttrs reports whether a SETATTR asks for any change (rather
// than only naming a handle or lock owner).
func changesAttrs(in *fuse.SetAttrIn) bool {
	const change = fuse.FATTR_MODE | fuse.FATTR_UID | fuse.FATTR_GID | fuse.FATTR_SIZE |
		fuse.FATTR_ATIME | fuse.FATTR_MTIME | fuse.FATTR_ATIME_NOW | fuse.FATTR_MTIME_NOW |
		fuse.FATTR_CTIME | fuse.FATTR_KILL_SUIDGID
	return in.Valid&change != 0
}

func (d *dirNode) Setattr(ctx context.Context, fh fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if changesAttrs(in) {
		return syscall.EROFS
	}
	return d.Getattr(ctx, fh, out)
}

func (n *fileNode) Setattr(ctx context.Context, fh fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if changesAttrs(in) {
		return syscall.EROFS
	}
	return n.Getattr(ctx, fh, out)
}

func (d *dirNode) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	return syscall.EROFS
}

func (d *dirNode) Removexattr(ctx context.Context, attr string) syscall.Errno { return syscall.EROFS }

func (n *fileNode) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	return syscall.EROFS
}

func (n *fileNode) Removexattr(ctx context.Context, attr string) syscall.Errno { return syscall.EROFS }

// Write cannot happen on a handle opened read-only; refuse it anyway.
func (h *fileHandle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	return 0, syscall.EROFS
}
