// The reviver: a layer between go-fuse's server and its node tree (the
// fs package's bridge) that lets a worker serve the node ids and file
// handles a dead worker handed the kernel. An id the tree does not have
// is made again from the node table (LOOKUP "." through the bridge,
// answered by the root's LookupNode); a handle of an earlier worker is
// reopened if it only read, and fails with EIO if it wrote.
package fuse

import (
	"encoding/binary"
	"sync"
	"syscall"
	"unsafe"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// Handle numbers: the worker's generation, a bit for handles that wrote
// (or may have), and the bridge's own number. Handle 0 is "none".
const (
	fhGenShift = 40
	fhWriter   = 1 << 32
	fhIndex    = 1<<32 - 1
)

// direntplus sizes, as the kernel lays out READDIRPLUS: an EntryOut,
// then a dirent of 24 bytes and the name, padded to 8 bytes.
const (
	entryOutSize  = int(unsafe.Sizeof(fuse.EntryOut{}))
	direntHeadLen = 24
)

type reviver struct {
	fuse.RawFileSystem // the fs package's bridge
	t                  *nodeTable
	gen                uint64 // this worker's generation, from 1

	rmu sync.Mutex // serializes revivals

	hmu sync.Mutex // guards old
	// old maps an earlier worker's handle to the bridge handle that
	// reopened it here (0: reads need none).
	old map[uint64]uint64
}

func newReviver(bridge fuse.RawFileSystem, t *nodeTable, gen uint32) *reviver {
	return &reviver{RawFileSystem: bridge, t: t, gen: uint64(gen) & (1<<24 - 1), old: make(map[uint64]uint64)}
}

// node makes sure the bridge has id, reviving it if the kernel got it
// from an earlier worker.
func (r *reviver) node(cancel <-chan struct{}, id uint64) fuse.Status {
	if r.t.served(id) {
		return fuse.OK
	}
	r.rmu.Lock()
	defer r.rmu.Unlock()
	if r.t.served(id) {
		return fuse.OK
	}
	if _, ok := r.t.desc(id); !ok {
		return fuse.Status(syscall.ESTALE)
	}
	var out fuse.EntryOut
	st := r.RawFileSystem.Lookup(cancel, &fuse.InHeader{NodeId: id}, ".", &out)
	if st.Ok() {
		r.t.revived(id)
	}
	return st
}

// nodes makes sure the bridge has every id.
func (r *reviver) nodes(cancel <-chan struct{}, ids ...uint64) fuse.Status {
	for _, id := range ids {
		if st := r.node(cancel, id); !st.Ok() {
			return st
		}
	}
	return fuse.OK
}

// handle returns the kernel's number for the bridge's handle fh.
func (r *reviver) handle(fh uint64, writer bool) uint64 {
	if fh == 0 {
		return 0
	}
	h := r.gen<<fhGenShift | fh&fhIndex
	if writer {
		h |= fhWriter
	}
	return h
}

// ours translates the kernel's handle h to the bridge's, if this worker
// handed it out (or it is 0).
func (r *reviver) ours(h uint64) (uint64, bool) {
	if h == 0 {
		return 0, true
	}
	return h & fhIndex, h>>fhGenShift == r.gen
}

// readable makes sure the bridge has node id and turns *h into the
// bridge handle serving reads on it: h's own, or for an earlier
// worker's handle that only read, one opened again here. An earlier
// worker's writer fails with EIO: its unsaved bytes are gone.
func (r *reviver) readable(cancel <-chan struct{}, id uint64, h *uint64, dir bool) fuse.Status {
	if st := r.node(cancel, id); !st.Ok() {
		return st
	}
	if fh, ok := r.ours(*h); ok {
		*h = fh
		return fuse.OK
	}
	if *h&fhWriter != 0 {
		return fuse.EIO
	}
	r.hmu.Lock()
	defer r.hmu.Unlock()
	if fh, ok := r.old[*h]; ok {
		*h = fh
		return fuse.OK
	}
	in := &fuse.OpenIn{InHeader: fuse.InHeader{NodeId: id}, Flags: syscall.O_RDONLY}
	var out fuse.OpenOut
	var st fuse.Status
	if dir {
		st = r.RawFileSystem.OpenDir(cancel, in, &out)
	} else {
		st = r.RawFileSystem.Open(cancel, in, &out)
	}
	if st == fuse.ENOSYS && !dir {
		st, out.Fh = fuse.OK, 0 // a read-only mount: reads take no handle
	}
	if !st.Ok() {
		return st
	}
	r.old[*h] = out.Fh
	*h = out.Fh
	return fuse.OK
}

// durable makes sure the bridge has node id and turns *h into the
// bridge handle for a flush or fsync; done means st is the answer, with
// nothing to pass on: an earlier worker's writer lost its unsaved bytes
// (EIO), its reader has nothing to save.
func (r *reviver) durable(cancel <-chan struct{}, id uint64, h *uint64) (st fuse.Status, done bool) {
	if st := r.node(cancel, id); !st.Ok() {
		return st, true
	}
	fh, ok := r.ours(*h)
	if !ok {
		if *h&fhWriter != 0 {
			return fuse.EIO, true
		}
		return fuse.OK, true
	}
	*h = fh
	return fuse.OK, false
}

// dropOld forgets an earlier worker's handle at its release.
func (r *reviver) dropOld(h uint64) (uint64, bool) {
	r.hmu.Lock()
	defer r.hmu.Unlock()
	fh, ok := r.old[h]
	delete(r.old, h)
	return fh, ok && fh != 0
}

func (r *reviver) Lookup(cancel <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	if st := r.node(cancel, h.NodeId); !st.Ok() {
		return st
	}
	return r.entry(r.RawFileSystem.Lookup(cancel, h, name, out), out)
}

// entry counts the lookup an answer carrying out hands the kernel.
func (r *reviver) entry(st fuse.Status, out *fuse.EntryOut) fuse.Status {
	if st.Ok() && out.NodeId != 0 {
		r.t.looked(out.NodeId)
	}
	return st
}

func (r *reviver) Forget(id, n uint64) {
	if drop := r.t.forget(id, n); drop > 0 {
		r.RawFileSystem.Forget(id, drop)
	}
	r.t.maybeCompact()
}

func (r *reviver) GetAttr(cancel <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	if st := r.node(cancel, in.NodeId); !st.Ok() {
		return st
	}
	r.attrHandle(&in.Flags_, &in.Fh_)
	return r.RawFileSystem.GetAttr(cancel, in, out)
}

// attrHandle translates the handle of a GETATTR or STATX that names one;
// an earlier worker's is dropped (the attributes are the node's).
func (r *reviver) attrHandle(flags *uint32, fh *uint64) {
	if *flags&fuse.FUSE_GETATTR_FH == 0 {
		return
	}
	if own, ok := r.ours(*fh); ok {
		*fh = own
	} else {
		*flags &^= fuse.FUSE_GETATTR_FH
		*fh = 0
	}
}

func (r *reviver) SetAttr(cancel <-chan struct{}, in *fuse.SetAttrIn, out *fuse.AttrOut) fuse.Status {
	if st := r.node(cancel, in.NodeId); !st.Ok() {
		return st
	}
	if in.Valid&fuse.FATTR_FH != 0 {
		fh, ok := r.ours(in.Fh)
		if !ok && in.Fh&fhWriter != 0 {
			return fuse.EIO
		}
		if ok {
			in.Fh = fh
		} else {
			in.Valid &^= fuse.FATTR_FH
			in.Fh = 0
		}
	}
	return r.RawFileSystem.SetAttr(cancel, in, out)
}

func (r *reviver) Mknod(cancel <-chan struct{}, in *fuse.MknodIn, name string, out *fuse.EntryOut) fuse.Status {
	if st := r.node(cancel, in.NodeId); !st.Ok() {
		return st
	}
	return r.entry(r.RawFileSystem.Mknod(cancel, in, name, out), out)
}

func (r *reviver) Mkdir(cancel <-chan struct{}, in *fuse.MkdirIn, name string, out *fuse.EntryOut) fuse.Status {
	if st := r.node(cancel, in.NodeId); !st.Ok() {
		return st
	}
	return r.entry(r.RawFileSystem.Mkdir(cancel, in, name, out), out)
}

func (r *reviver) Unlink(cancel <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	if st := r.node(cancel, h.NodeId); !st.Ok() {
		return st
	}
	return r.RawFileSystem.Unlink(cancel, h, name)
}

func (r *reviver) Rmdir(cancel <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	if st := r.node(cancel, h.NodeId); !st.Ok() {
		return st
	}
	return r.RawFileSystem.Rmdir(cancel, h, name)
}

func (r *reviver) Rename(cancel <-chan struct{}, in *fuse.RenameIn, oldName, newName string) fuse.Status {
	if st := r.nodes(cancel, in.NodeId, in.Newdir); !st.Ok() {
		return st
	}
	return r.RawFileSystem.Rename(cancel, in, oldName, newName)
}

func (r *reviver) Link(cancel <-chan struct{}, in *fuse.LinkIn, name string, out *fuse.EntryOut) fuse.Status {
	if st := r.nodes(cancel, in.NodeId, in.Oldnodeid); !st.Ok() {
		return st
	}
	return r.entry(r.RawFileSystem.Link(cancel, in, name, out), out)
}

func (r *reviver) Symlink(cancel <-chan struct{}, h *fuse.InHeader, target, name string, out *fuse.EntryOut) fuse.Status {
	if st := r.node(cancel, h.NodeId); !st.Ok() {
		return st
	}
	return r.entry(r.RawFileSystem.Symlink(cancel, h, target, name, out), out)
}

func (r *reviver) Readlink(cancel <-chan struct{}, h *fuse.InHeader) ([]byte, fuse.Status) {
	if st := r.node(cancel, h.NodeId); !st.Ok() {
		return nil, st
	}
	return r.RawFileSystem.Readlink(cancel, h)
}

func (r *reviver) Access(cancel <-chan struct{}, in *fuse.AccessIn) fuse.Status {
	if st := r.node(cancel, in.NodeId); !st.Ok() {
		return st
	}
	return r.RawFileSystem.Access(cancel, in)
}

func (r *reviver) GetXAttr(cancel <-chan struct{}, h *fuse.InHeader, attr string, dest []byte) (uint32, fuse.Status) {
	if st := r.node(cancel, h.NodeId); !st.Ok() {
		return 0, st
	}
	return r.RawFileSystem.GetXAttr(cancel, h, attr, dest)
}

func (r *reviver) ListXAttr(cancel <-chan struct{}, h *fuse.InHeader, dest []byte) (uint32, fuse.Status) {
	if st := r.node(cancel, h.NodeId); !st.Ok() {
		return 0, st
	}
	return r.RawFileSystem.ListXAttr(cancel, h, dest)
}

func (r *reviver) SetXAttr(cancel <-chan struct{}, in *fuse.SetXAttrIn, attr string, data []byte) fuse.Status {
	if st := r.node(cancel, in.NodeId); !st.Ok() {
		return st
	}
	return r.RawFileSystem.SetXAttr(cancel, in, attr, data)
}

func (r *reviver) RemoveXAttr(cancel <-chan struct{}, h *fuse.InHeader, attr string) fuse.Status {
	if st := r.node(cancel, h.NodeId); !st.Ok() {
		return st
	}
	return r.RawFileSystem.RemoveXAttr(cancel, h, attr)
}

func (r *reviver) Create(cancel <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) fuse.Status {
	if st := r.node(cancel, in.NodeId); !st.Ok() {
		return st
	}
	st := r.entry(r.RawFileSystem.Create(cancel, in, name, out), &out.EntryOut)
	out.Fh = r.handle(out.Fh, true)
	return st
}

func (r *reviver) Tmpfile(cancel <-chan struct{}, in *fuse.CreateIn, out *fuse.CreateOut) fuse.Status {
	if st := r.node(cancel, in.NodeId); !st.Ok() {
		return st
	}
	st := r.entry(r.RawFileSystem.Tmpfile(cancel, in, out), &out.EntryOut)
	out.Fh = r.handle(out.Fh, true)
	return st
}

// writes reports whether an open with flags may write.
func writes(flags uint32) bool {
	return flags&syscall.O_ACCMODE != syscall.O_RDONLY || flags&(syscall.O_TRUNC|syscall.O_APPEND) != 0
}

func (r *reviver) Open(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	if st := r.node(cancel, in.NodeId); !st.Ok() {
		return st
	}
	st := r.RawFileSystem.Open(cancel, in, out)
	out.Fh = r.handle(out.Fh, writes(in.Flags))
	return st
}

func (r *reviver) Read(cancel <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	if st := r.readable(cancel, in.NodeId, &in.Fh, false); !st.Ok() {
		return nil, st
	}
	return r.RawFileSystem.Read(cancel, in, buf)
}

func (r *reviver) Lseek(cancel <-chan struct{}, in *fuse.LseekIn, out *fuse.LseekOut) fuse.Status {
	if st := r.readable(cancel, in.NodeId, &in.Fh, false); !st.Ok() {
		return st
	}
	return r.RawFileSystem.Lseek(cancel, in, out)
}

// locked passes a lock request on a handle of this worker; locks held
// through a dead worker's handles are gone (EIO).
func (r *reviver) locked(cancel <-chan struct{}, in *fuse.LkIn) fuse.Status {
	if st := r.node(cancel, in.NodeId); !st.Ok() {
		return st
	}
	fh, ok := r.ours(in.Fh)
	if !ok {
		return fuse.EIO
	}
	in.Fh = fh
	return fuse.OK
}

func (r *reviver) GetLk(cancel <-chan struct{}, in *fuse.LkIn, out *fuse.LkOut) fuse.Status {
	if st := r.locked(cancel, in); !st.Ok() {
		return st
	}
	return r.RawFileSystem.GetLk(cancel, in, out)
}

func (r *reviver) SetLk(cancel <-chan struct{}, in *fuse.LkIn) fuse.Status {
	if st := r.locked(cancel, in); !st.Ok() {
		return st
	}
	return r.RawFileSystem.SetLk(cancel, in)
}

func (r *reviver) SetLkw(cancel <-chan struct{}, in *fuse.LkIn) fuse.Status {
	if st := r.locked(cancel, in); !st.Ok() {
		return st
	}
	return r.RawFileSystem.SetLkw(cancel, in)
}

func (r *reviver) Release(cancel <-chan struct{}, in *fuse.ReleaseIn) {
	if fh, ok := r.ours(in.Fh); ok {
		in.Fh = fh
		r.RawFileSystem.Release(cancel, in)
		return
	}
	if fh, ok := r.dropOld(in.Fh); ok {
		in.Fh = fh
		r.RawFileSystem.Release(cancel, in)
	}
}

func (r *reviver) ReleaseDir(in *fuse.ReleaseIn) {
	if fh, ok := r.ours(in.Fh); ok {
		in.Fh = fh
		r.RawFileSystem.ReleaseDir(in)
		return
	}
	if fh, ok := r.dropOld(in.Fh); ok {
		in.Fh = fh
		r.RawFileSystem.ReleaseDir(in)
	}
}

// writable makes sure the bridge has node id and turns *h into the
// bridge handle for a write: EIO for an earlier worker's.
func (r *reviver) writable(cancel <-chan struct{}, id uint64, h *uint64) fuse.Status {
	if st := r.node(cancel, id); !st.Ok() {
		return st
	}
	fh, ok := r.ours(*h)
	if !ok {
		return fuse.EIO
	}
	*h = fh
	return fuse.OK
}

func (r *reviver) Write(cancel <-chan struct{}, in *fuse.WriteIn, data []byte) (uint32, fuse.Status) {
	if st := r.writable(cancel, in.NodeId, &in.Fh); !st.Ok() {
		return 0, st
	}
	return r.RawFileSystem.Write(cancel, in, data)
}

func (r *reviver) Writev(cancel <-chan struct{}, in *fuse.WriteIn, data [][]byte) (uint32, fuse.Status) {
	if st := r.writable(cancel, in.NodeId, &in.Fh); !st.Ok() {
		return 0, st
	}
	return r.RawFileSystem.Writev(cancel, in, data)
}

func (r *reviver) Fallocate(cancel <-chan struct{}, in *fuse.FallocateIn) fuse.Status {
	if st := r.writable(cancel, in.NodeId, &in.Fh); !st.Ok() {
		return st
	}
	return r.RawFileSystem.Fallocate(cancel, in)
}

func (r *reviver) CopyFileRange(cancel <-chan struct{}, in *fuse.CopyFileRangeIn) (uint32, fuse.Status) {
	if st := r.writable(cancel, in.NodeId, &in.FhIn); !st.Ok() {
		return 0, st
	}
	if st := r.writable(cancel, in.NodeIdOut, &in.FhOut); !st.Ok() {
		return 0, st
	}
	return r.RawFileSystem.CopyFileRange(cancel, in)
}

func (r *reviver) Ioctl(cancel <-chan struct{}, in *fuse.IoctlIn, inbuf []byte, out *fuse.IoctlOut, outbuf []byte) fuse.Status {
	if st := r.writable(cancel, in.NodeId, &in.Fh); !st.Ok() {
		return st
	}
	return r.RawFileSystem.Ioctl(cancel, in, inbuf, out, outbuf)
}

func (r *reviver) Flush(cancel <-chan struct{}, in *fuse.FlushIn) fuse.Status {
	if st, done := r.durable(cancel, in.NodeId, &in.Fh); done {
		return st
	}
	return r.RawFileSystem.Flush(cancel, in)
}

func (r *reviver) Fsync(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	if st, done := r.durable(cancel, in.NodeId, &in.Fh); done {
		return st
	}
	return r.RawFileSystem.Fsync(cancel, in)
}

func (r *reviver) OpenDir(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	if st := r.node(cancel, in.NodeId); !st.Ok() {
		return st
	}
	st := r.RawFileSystem.OpenDir(cancel, in, out)
	out.Fh = r.handle(out.Fh, false)
	return st
}

func (r *reviver) ReadDir(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	if st := r.readable(cancel, in.NodeId, &in.Fh, true); !st.Ok() {
		return st
	}
	return r.RawFileSystem.ReadDir(cancel, in, out)
}

// ReadDirPlus counts the lookup each entry with a node hands the kernel.
func (r *reviver) ReadDirPlus(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	if st := r.readable(cancel, in.NodeId, &in.Fh, true); !st.Ok() {
		return st
	}
	st := r.RawFileSystem.ReadDirPlus(cancel, in, out)
	if st.Ok() {
		for _, id := range direntplusNodes(out.Bytes()) {
			r.t.looked(id)
		}
	}
	return st
}

// direntplusNodes returns the node ids of a READDIRPLUS answer's
// entries (0 for ".", ".." and names that failed).
func direntplusNodes(b []byte) []uint64 {
	var ids []uint64
	for len(b) >= entryOutSize+direntHeadLen {
		if id := binary.LittleEndian.Uint64(b); id != 0 {
			ids = append(ids, id)
		}
		nameLen := int(binary.LittleEndian.Uint32(b[entryOutSize+16:]))
		n := (entryOutSize + direntHeadLen + nameLen + 7) &^ 7
		b = b[min(n, len(b)):]
	}
	return ids
}

func (r *reviver) FsyncDir(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	if st, done := r.durable(cancel, in.NodeId, &in.Fh); done {
		return st
	}
	return r.RawFileSystem.FsyncDir(cancel, in)
}

func (r *reviver) StatFs(cancel <-chan struct{}, h *fuse.InHeader, out *fuse.StatfsOut) fuse.Status {
	if st := r.node(cancel, h.NodeId); !st.Ok() {
		return st
	}
	return r.RawFileSystem.StatFs(cancel, h, out)
}

func (r *reviver) Statx(cancel <-chan struct{}, in *fuse.StatxIn, out *fuse.StatxOut) fuse.Status {
	if st := r.node(cancel, in.NodeId); !st.Ok() {
		return st
	}
	r.attrHandle(&in.GetattrFlags, &in.Fh)
	return r.RawFileSystem.Statx(cancel, in, out)
}
