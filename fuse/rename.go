// Rename of a file: a server-side copy then a delete of the source, so
// the save-to-temp-then-rename pattern of checkpoint writers works.
// Directories are not renamed (EXDEV: mv then copies them file by file).
package fuse

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
)

// renameNoReplace is RENAME_NOREPLACE of renameat2(2).
const renameNoReplace = 0x1

// Rename moves the file name in d to newName in newParent, replacing
// what is there. The copy lands before the source is deleted: a failure
// in between leaves both, never neither.
func (d *dirNode) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	if d.fsys.opts.ReadOnly {
		return syscall.EROFS
	}
	nd, ok := newParent.(*dirNode)
	if !ok || flags&fs.RENAME_EXCHANGE != 0 {
		return syscall.EINVAL // rename(2): a flag the file system does not support
	}
	if !validName(newName) {
		return syscall.EINVAL
	}
	src := d.GetChild(name)
	if src != nil && src.IsDir() {
		return syscall.EXDEV
	}
	dst := nd.prefix + newName
	if flags&renameNoReplace != 0 {
		if _, err := d.fsys.cl.head(ctx, dst); err == nil {
			return syscall.EEXIST
		} else if !errors.Is(err, errNotFound) {
			return d.fsys.errno("rename", err)
		}
	}
	replaced, _ := nd.childFile(newName)
	var err error
	if n, ok := d.childFile(name); ok {
		err = n.moveTo(d.fsys.ctx, dst)
	} else {
		_, err = d.fsys.move(d.fsys.ctx, d.prefix+name, dst)
	}
	if err != nil {
		return d.fsys.errno("rename", err)
	}
	if src, ok := d.childFile(name); replaced != nil && (!ok || src != replaced) {
		d.fsys.ids.unlinked(replaced.StableAttr().Ino)
	}
	d.fsys.dirs.drop(d.prefix)
	d.fsys.dirs.drop(nd.prefix)
	return 0
}

// move copies src to dst and deletes src.
func (f *filesys) move(ctx context.Context, src, dst string) (objInfo, error) {
	info, err := f.cl.copy(ctx, src, dst)
	if err != nil {
		return objInfo{}, err
	}
	if err := f.cl.remove(ctx, src); err != nil {
		return objInfo{}, err
	}
	return info, nil
}

// moveTo renames the node's object to dst. A file open for writing is
// uploaded first, and its later uploads go to dst.
func (n *fileNode) moveTo(ctx context.Context, dst string) error {
	n.smu.Lock()
	defer n.smu.Unlock()
	if s := n.stageNow(); s != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.unlinked {
			return fmt.Errorf("rename %q: %w", n.keyOf(), errNotFound)
		}
		if err := n.flushLocked(ctx, s); err != nil {
			return err
		}
	}
	src := n.keyOf()
	if src == dst {
		return nil
	}
	info, err := n.fsys.move(ctx, src, dst)
	if err != nil {
		return err
	}
	n.mu.Lock()
	n.key = dst
	n.openETag = ""
	n.mu.Unlock()
	n.fsys.ids.rekey(n.StableAttr().Ino, dst)
	n.update(info)
	return nil
}
