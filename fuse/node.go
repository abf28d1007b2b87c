// Inodes: the mount-wide state, directory and file nodes, their
// attributes, and inode numbers that are stable per path.
package fuse

import (
	"context"
	"errors"
	"hash/fnv"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/rs/zerolog"
)

// filesys is what every node of one mount shares.
type filesys struct {
	opts    *Options
	cl      *client
	budget  *budget
	dirs    *dirCache
	log     zerolog.Logger
	mounted time.Time // the mtime of every directory
	// ctx ends when the mount is torn down; background fetches use it.
	ctx    context.Context
	cancel context.CancelFunc
	// ids are the node ids the kernel holds (nodeids.go).
	ids *nodeTable
	// root is the mount's root directory.
	root *dirNode
}

// inoOf returns the inode number of the object or directory at key. It
// is a 63-bit hash of the key and the file type, so it is the same for
// a path across lookups and mounts without a table that grows with
// every path seen. Two paths share a number with probability 2^-63 per
// pair (about 5e-6 for ten million paths).
func inoOf(key string, dir bool) uint64 {
	h := fnv.New64a()
	h.Write([]byte(key))
	if dir {
		h.Write([]byte{0, 'd'})
	} else {
		h.Write([]byte{0, 'f'})
	}
	ino := h.Sum64() &^ (1 << 63)
	if ino <= fuse.FUSE_ROOT_ID {
		ino += 2
	}
	return ino
}

// dirNode is a directory: a key prefix ("" for the bucket's top, else
// ending in "/").
type dirNode struct {
	fs.Inode
	fsys   *filesys
	prefix string
}

// fileNode is an object, or a file being written that will be one.
type fileNode struct {
	fs.Inode
	fsys *filesys

	// smu serializes creating, renaming and dropping the stage (held
	// across the download of a file opened for writing). Lock order:
	// smu, then stage.mu, then mu.
	smu sync.Mutex

	mu sync.Mutex // guards the fields below
	// key is the object's key; a rename changes it (with smu held).
	key string
	// stage is the local copy while the file is open for writing.
	stage *stage
	// info is the object as last seen (HEAD or listing), at seen.
	info objInfo
	seen time.Time
	// openETag is the ETag the last open pinned; the kernel's page
	// cache for this inode holds bytes of that version only.
	openETag string
	// pinned: the node is one version of the object, info never
	// changes (read-only mounts; see noopen.go).
	pinned bool
	// shared serves reads that come without a handle.
	shared sharedReader
}

var (
	_ fs.NodeGetattrer      = (*dirNode)(nil)
	_ fs.NodeLookuper       = (*dirNode)(nil)
	_ fs.NodeOpendirHandler = (*dirNode)(nil)
	_ fs.NodeStatfser       = (*dirNode)(nil)
	_ fs.NodeGetattrer      = (*fileNode)(nil)
	_ fs.NodeOpener         = (*fileNode)(nil)
)

// dirAttr fills out for a directory (the bridge sets its inode number:
// its node id).
func (f *filesys) dirAttr(out *fuse.Attr) {
	out.Mode = fuse.S_IFDIR | uint32(f.opts.DirMode.Perm())
	out.Nlink = 2
	f.ownAttr(out, f.mounted)
}

// fileAttr fills out for a file of inode number ino (inoOf its key, but
// a renamed node keeps the number of its first key).
func (f *filesys) fileAttr(out *fuse.Attr, ino uint64, info objInfo) {
	out.Mode = fuse.S_IFREG | uint32(f.opts.FileMode.Perm())
	out.Nlink = 1
	out.Ino = ino
	out.Size = uint64(info.size)
	out.Blocks = (out.Size + 511) / 512
	// Whole seconds: a listing gives milliseconds, a HEAD seconds, and
	// the kernel drops a file's page cache when its mtime changes.
	f.ownAttr(out, info.mtime.Truncate(time.Second))
}

func (f *filesys) ownAttr(out *fuse.Attr, mtime time.Time) {
	out.Uid, out.Gid = f.opts.UID, f.opts.GID
	out.Blksize = 1 << 20
	out.SetTimes(&mtime, &mtime, &mtime)
}

// Getattr reports a directory: the mount's owner and mode, the mount
// time as mtime.
func (d *dirNode) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	d.fsys.dirAttr(&out.Attr)
	out.SetTimeout(d.fsys.opts.MetadataTTL)
	return 0
}

// Statfs reports a large, mostly free file system so that tools that
// check for space before writing do not refuse.
func (d *dirNode) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	const blocks = 1 << 40 // of 4 KiB: 4 PiB
	out.Blocks, out.Bfree, out.Bavail = blocks, blocks, blocks
	out.Files, out.Ffree = 1<<40, 1<<40
	out.Bsize, out.Frsize = 4096, 4096
	out.NameLen = 255
	return 0
}

// child returns the inode for name in d, an existing one (its
// attributes refreshed) if the kernel already knows it, and fills out.
func (d *dirNode) child(ctx context.Context, name string, dir bool, info objInfo, out *fuse.EntryOut) *fs.Inode {
	f := d.fsys
	if dir {
		prefix := d.prefix + name + "/"
		f.dirAttr(&out.Attr)
		out.SetEntryTimeout(f.opts.MetadataTTL)
		out.SetAttrTimeout(f.opts.MetadataTTL)
		if c := d.GetChild(name); c != nil {
			if n, ok := c.Operations().(*dirNode); ok && n.prefix == prefix {
				return c
			}
		}
		return d.NewInode(ctx, &dirNode{fsys: f, prefix: prefix},
			fs.StableAttr{Mode: fuse.S_IFDIR, Ino: f.ids.claim(nodeDesc{dir: true, key: prefix})})
	}
	key := d.prefix + name
	out.SetEntryTimeout(f.opts.MetadataTTL)
	out.SetAttrTimeout(f.opts.MetadataTTL)
	if c := d.GetChild(name); c != nil {
		if n, ok := c.Operations().(*fileNode); ok && n.keyOf() == key && n.sameVersion(info) {
			f.fileAttr(&out.Attr, c.StableAttr().Ino, info)
			n.refresh(ctx, info, out)
			return c
		}
	}
	n := &fileNode{fsys: f, key: key, info: info, seen: time.Now(), pinned: f.opts.ReadOnly}
	ino := f.ids.claim(nodeDesc{key: key, info: info})
	f.fileAttr(&out.Attr, ino, info)
	return d.NewInode(ctx, n, fs.StableAttr{Mode: fuse.S_IFREG, Ino: ino})
}

// keyOf returns the node's key.
func (n *fileNode) keyOf() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.key
}

// sameVersion reports whether info may update the node: always, unless
// the node is pinned to another version.
func (n *fileNode) sameVersion(info objInfo) bool {
	if !n.pinned {
		return true
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.info.etag == info.etag && n.info.size == info.size
}

// refresh records info from S3 for the node and fills out with the
// node's attributes: those of S3, unless the node is being written
// (S3 has not seen its bytes yet).
func (n *fileNode) refresh(ctx context.Context, info objInfo, out *fuse.EntryOut) {
	if n.stageNow() == nil {
		n.update(info)
		return
	}
	var a fuse.AttrOut
	if n.Getattr(ctx, nil, &a) == 0 {
		out.Attr = a.Attr
	}
}

// update records a fresh view of the object.
func (n *fileNode) update(info objInfo) {
	n.mu.Lock()
	n.info, n.seen = info, time.Now()
	n.mu.Unlock()
}

// current returns the object's attributes, from a HEAD if the last view
// is older than the metadata TTL (a pinned node's never change).
func (n *fileNode) current(ctx context.Context) (objInfo, error) {
	n.mu.Lock()
	info, fresh := n.info, n.pinned || time.Since(n.seen) < n.fsys.opts.MetadataTTL
	n.mu.Unlock()
	if fresh {
		return info, nil
	}
	info, err := n.fsys.cl.head(ctx, n.keyOf())
	if err != nil {
		return objInfo{}, err
	}
	n.update(info)
	return info, nil
}

// Getattr reports the object's size and mtime, refreshed once the
// metadata TTL has passed. An open handle reports the version it pinned;
// a file being written reports its staged size.
func (n *fileNode) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	var info objInfo
	if s := n.stageNow(); s != nil {
		n.mu.Lock()
		info = n.info
		n.mu.Unlock()
		info.size = s.size.Load()
	} else if h, ok := fh.(*fileHandle); ok {
		info = objInfo{size: h.size, mtime: h.mtime, etag: h.etag}
	} else {
		var err error
		if info, err = n.current(ctx); err != nil {
			return n.fsys.errno("getattr", err)
		}
	}
	n.fsys.fileAttr(&out.Attr, n.StableAttr().Ino, info)
	out.SetTimeout(n.fsys.opts.MetadataTTL)
	return 0
}

// Open pins the object's current version (ETag and size) for the
// handle. The kernel keeps its page cache for the inode only if the
// version is the one the previous open pinned. An open for writing, and
// any open while the file is being written, gets a handle on the stage.
func (n *fileNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	const writing = syscall.O_WRONLY | syscall.O_RDWR | syscall.O_TRUNC | syscall.O_APPEND
	if flags&writing != 0 || n.stageNow() != nil {
		if n.fsys.opts.ReadOnly {
			return nil, 0, syscall.EROFS
		}
		s, err := n.openStage(ctx, flags&syscall.O_TRUNC != 0)
		if err != nil {
			return nil, 0, n.fsys.errno("open", err)
		}
		return &stageHandle{n: n, s: s}, openStaged, 0
	}
	if n.pinned {
		// Read-only mount: no opens at all (see noopen.go).
		return nil, 0, syscall.ENOSYS
	}
	info, err := n.current(ctx)
	if err != nil {
		return nil, 0, n.fsys.errno("open", err)
	}
	// A read-only handle has nothing to flush at close: the kernel
	// need not wait for a FLUSH round trip.
	fuseFlags := uint32(fuse.FOPEN_NOFLUSH)
	n.mu.Lock()
	if info.etag != "" && info.etag == n.openETag {
		fuseFlags |= fuse.FOPEN_KEEP_CACHE
	}
	n.openETag = info.etag
	n.mu.Unlock()
	return newFileHandle(n.fsys, n.keyOf(), info), fuseFlags, 0
}

// errno maps err for the kernel, logging what is not a plain absence.
func (f *filesys) errno(op string, err error) syscall.Errno {
	e := errnoOf(err)
	if (e != syscall.ENOENT && e != syscall.EINTR) || errors.Is(err, errNoBucket) {
		f.log.Warn().Err(err).Str("op", op).Msg("fuse: operation failed")
	}
	return e
}
