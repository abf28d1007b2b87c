// The reviver's operations: each makes sure go-fuse's tree has the
// request's nodes and turns the kernel's handles into the tree's
// (revive.go), then passes the request on; answers that hand the kernel
// a node are counted.
package fuse

import (
	"encoding/binary"
	"unsafe"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// direntplus sizes, as the kernel lays out READDIRPLUS: an EntryOut,
// then a dirent of 24 bytes and the name, padded to 8 bytes.
const (
	entryOutSize  = int(unsafe.Sizeof(fuse.EntryOut{}))
	direntHeadLen = 24
)

func (r *reviver) GetAttr(cancel <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	if st := r.node(cancel, &in.InHeader); !st.Ok() {
		return st
	}
	r.attrHandle(&in.Flags_, &in.Fh_)
	return r.RawFileSystem.GetAttr(cancel, in, out)
}

func (r *reviver) SetAttr(cancel <-chan struct{}, in *fuse.SetAttrIn, out *fuse.AttrOut) fuse.Status {
	if st := r.node(cancel, &in.InHeader); !st.Ok() {
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
	if st := r.node(cancel, &in.InHeader); !st.Ok() {
		return st
	}
	return r.entry(r.RawFileSystem.Mknod(cancel, in, name, out), out)
}

func (r *reviver) Mkdir(cancel <-chan struct{}, in *fuse.MkdirIn, name string, out *fuse.EntryOut) fuse.Status {
	if st := r.node(cancel, &in.InHeader); !st.Ok() {
		return st
	}
	return r.entry(r.RawFileSystem.Mkdir(cancel, in, name, out), out)
}

func (r *reviver) Unlink(cancel <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	if st := r.node(cancel, h); !st.Ok() {
		return st
	}
	return r.RawFileSystem.Unlink(cancel, h, name)
}

func (r *reviver) Rmdir(cancel <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	if st := r.node(cancel, h); !st.Ok() {
		return st
	}
	return r.RawFileSystem.Rmdir(cancel, h, name)
}

func (r *reviver) Rename(cancel <-chan struct{}, in *fuse.RenameIn, oldName, newName string) fuse.Status {
	if st := r.nodes(cancel, &in.InHeader, in.Newdir); !st.Ok() {
		return st
	}
	return r.RawFileSystem.Rename(cancel, in, oldName, newName)
}

func (r *reviver) Link(cancel <-chan struct{}, in *fuse.LinkIn, name string, out *fuse.EntryOut) fuse.Status {
	if st := r.nodes(cancel, &in.InHeader, in.Oldnodeid); !st.Ok() {
		return st
	}
	return r.entry(r.RawFileSystem.Link(cancel, in, name, out), out)
}

func (r *reviver) Symlink(cancel <-chan struct{}, h *fuse.InHeader, target, name string, out *fuse.EntryOut) fuse.Status {
	if st := r.node(cancel, h); !st.Ok() {
		return st
	}
	return r.entry(r.RawFileSystem.Symlink(cancel, h, target, name, out), out)
}

func (r *reviver) Readlink(cancel <-chan struct{}, h *fuse.InHeader) ([]byte, fuse.Status) {
	if st := r.node(cancel, h); !st.Ok() {
		return nil, st
	}
	return r.RawFileSystem.Readlink(cancel, h)
}

func (r *reviver) Access(cancel <-chan struct{}, in *fuse.AccessIn) fuse.Status {
	if st := r.node(cancel, &in.InHeader); !st.Ok() {
		return st
	}
	return r.RawFileSystem.Access(cancel, in)
}

func (r *reviver) GetXAttr(cancel <-chan struct{}, h *fuse.InHeader, attr string, dest []byte) (uint32, fuse.Status) {
	if st := r.node(cancel, h); !st.Ok() {
		return 0, st
	}
	return r.RawFileSystem.GetXAttr(cancel, h, attr, dest)
}

func (r *reviver) ListXAttr(cancel <-chan struct{}, h *fuse.InHeader, dest []byte) (uint32, fuse.Status) {
	if st := r.node(cancel, h); !st.Ok() {
		return 0, st
	}
	return r.RawFileSystem.ListXAttr(cancel, h, dest)
}

func (r *reviver) SetXAttr(cancel <-chan struct{}, in *fuse.SetXAttrIn, attr string, data []byte) fuse.Status {
	if st := r.node(cancel, &in.InHeader); !st.Ok() {
		return st
	}
	return r.RawFileSystem.SetXAttr(cancel, in, attr, data)
}

func (r *reviver) RemoveXAttr(cancel <-chan struct{}, h *fuse.InHeader, attr string) fuse.Status {
	if st := r.node(cancel, h); !st.Ok() {
		return st
	}
	return r.RawFileSystem.RemoveXAttr(cancel, h, attr)
}

func (r *reviver) Create(cancel <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) fuse.Status {
	if st := r.node(cancel, &in.InHeader); !st.Ok() {
		return st
	}
	st := r.entry(r.RawFileSystem.Create(cancel, in, name, out), &out.EntryOut)
	out.Fh = r.handle(out.Fh, true)
	return st
}

func (r *reviver) Tmpfile(cancel <-chan struct{}, in *fuse.CreateIn, out *fuse.CreateOut) fuse.Status {
	if st := r.node(cancel, &in.InHeader); !st.Ok() {
		return st
	}
	st := r.entry(r.RawFileSystem.Tmpfile(cancel, in, out), &out.EntryOut)
	out.Fh = r.handle(out.Fh, true)
	return st
}

func (r *reviver) Open(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	if st := r.node(cancel, &in.InHeader); !st.Ok() {
		return st
	}
	st := r.RawFileSystem.Open(cancel, in, out)
	staged := out.OpenFlags&openStaged != 0
	out.OpenFlags &^= openStaged
	out.Fh = r.handle(out.Fh, staged || writes(in.Flags))
	return st
}

func (r *reviver) Read(cancel <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	if st := r.readable(cancel, &in.InHeader, &in.Fh, false); !st.Ok() {
		return nil, st
	}
	return r.RawFileSystem.Read(cancel, in, buf)
}

func (r *reviver) Lseek(cancel <-chan struct{}, in *fuse.LseekIn, out *fuse.LseekOut) fuse.Status {
	if st := r.readable(cancel, &in.InHeader, &in.Fh, false); !st.Ok() {
		return st
	}
	return r.RawFileSystem.Lseek(cancel, in, out)
}

func (r *reviver) GetLk(cancel <-chan struct{}, in *fuse.LkIn, out *fuse.LkOut) fuse.Status {
	if st := r.writable(cancel, &in.InHeader, &in.Fh); !st.Ok() {
		return st
	}
	return r.RawFileSystem.GetLk(cancel, in, out)
}

func (r *reviver) SetLk(cancel <-chan struct{}, in *fuse.LkIn) fuse.Status {
	if st := r.writable(cancel, &in.InHeader, &in.Fh); !st.Ok() {
		return st
	}
	return r.RawFileSystem.SetLk(cancel, in)
}

func (r *reviver) SetLkw(cancel <-chan struct{}, in *fuse.LkIn) fuse.Status {
	if st := r.writable(cancel, &in.InHeader, &in.Fh); !st.Ok() {
		return st
	}
	return r.RawFileSystem.SetLkw(cancel, in)
}

func (r *reviver) Release(cancel <-chan struct{}, in *fuse.ReleaseIn) {
	r.taken.track(in.Unique)
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
	r.taken.track(in.Unique)
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

func (r *reviver) Write(cancel <-chan struct{}, in *fuse.WriteIn, data []byte) (uint32, fuse.Status) {
	if st := r.writable(cancel, &in.InHeader, &in.Fh); !st.Ok() {
		return 0, st
	}
	return r.RawFileSystem.Write(cancel, in, data)
}

func (r *reviver) Writev(cancel <-chan struct{}, in *fuse.WriteIn, data [][]byte) (uint32, fuse.Status) {
	if st := r.writable(cancel, &in.InHeader, &in.Fh); !st.Ok() {
		return 0, st
	}
	return r.RawFileSystem.Writev(cancel, in, data)
}

func (r *reviver) Fallocate(cancel <-chan struct{}, in *fuse.FallocateIn) fuse.Status {
	if st := r.writable(cancel, &in.InHeader, &in.Fh); !st.Ok() {
		return st
	}
	return r.RawFileSystem.Fallocate(cancel, in)
}

func (r *reviver) CopyFileRange(cancel <-chan struct{}, in *fuse.CopyFileRangeIn) (uint32, fuse.Status) {
	if st := r.writable(cancel, &in.InHeader, &in.FhIn); !st.Ok() {
		return 0, st
	}
	if st := r.revive(cancel, in.NodeIdOut); !st.Ok() {
		return 0, st
	}
	if st := r.ownWriter(&in.FhOut); !st.Ok() {
		return 0, st
	}
	return r.RawFileSystem.CopyFileRange(cancel, in)
}

func (r *reviver) Ioctl(cancel <-chan struct{}, in *fuse.IoctlIn, inbuf []byte, out *fuse.IoctlOut, outbuf []byte) fuse.Status {
	if st := r.writable(cancel, &in.InHeader, &in.Fh); !st.Ok() {
		return st
	}
	return r.RawFileSystem.Ioctl(cancel, in, inbuf, out, outbuf)
}

func (r *reviver) Flush(cancel <-chan struct{}, in *fuse.FlushIn) fuse.Status {
	if st, done := r.durable(cancel, &in.InHeader, &in.Fh); done {
		return st
	}
	return r.RawFileSystem.Flush(cancel, in)
}

func (r *reviver) Fsync(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	if st, done := r.durable(cancel, &in.InHeader, &in.Fh); done {
		return st
	}
	return r.RawFileSystem.Fsync(cancel, in)
}

func (r *reviver) OpenDir(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	if st := r.node(cancel, &in.InHeader); !st.Ok() {
		return st
	}
	st := r.RawFileSystem.OpenDir(cancel, in, out)
	out.Fh = r.handle(out.Fh, false)
	return st
}

func (r *reviver) ReadDir(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	if st := r.readable(cancel, &in.InHeader, &in.Fh, true); !st.Ok() {
		return st
	}
	return r.RawFileSystem.ReadDir(cancel, in, out)
}

// ReadDirPlus counts the lookup each entry with a node hands the kernel.
func (r *reviver) ReadDirPlus(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	if st := r.readable(cancel, &in.InHeader, &in.Fh, true); !st.Ok() {
		return st
	}
	st := r.RawFileSystem.ReadDirPlus(cancel, in, out)
	if st.Ok() {
		r.t.looked(direntplusNodes(out.Bytes())...)
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
	if st, done := r.durable(cancel, &in.InHeader, &in.Fh); done {
		return st
	}
	return r.RawFileSystem.FsyncDir(cancel, in)
}

func (r *reviver) StatFs(cancel <-chan struct{}, h *fuse.InHeader, out *fuse.StatfsOut) fuse.Status {
	if st := r.node(cancel, h); !st.Ok() {
		return st
	}
	return r.RawFileSystem.StatFs(cancel, h, out)
}

func (r *reviver) Statx(cancel <-chan struct{}, in *fuse.StatxIn, out *fuse.StatxOut) fuse.Status {
	if st := r.node(cancel, &in.InHeader); !st.Ok() {
		return st
	}
	r.attrHandle(&in.GetattrFlags, &in.Fh)
	return r.RawFileSystem.Statx(cancel, in, out)
}
