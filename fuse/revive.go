// The reviver: a layer between go-fuse's server and its node tree (the
// fs package's bridge) that lets a worker serve the node ids and file
// handles a dead worker handed the kernel. An id the tree does not have
// is made again from the node table (LOOKUP "." through the bridge,
// answered by the root's LookupNode); a handle of an earlier worker is
// reopened if it only read, and fails with EIO if it wrote.
package fuse

import (
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// Handle numbers: the worker's generation, a bit for handles that wrote
// or read bytes not yet uploaded (a stage), and the bridge's own number.
// Handle 0 is "none".
const (
	fhGenShift = 40
	fhWriter   = 1 << 32
	fhIndex    = 1<<32 - 1
)

// openStaged, in the open flags a node's Open returns, marks a handle on
// a stage (a file being written): after a crash it fails like a
// writer's, since the staged bytes it read are gone. The reviver clears
// it before the kernel sees it (no FOPEN_ flag uses the bit).
const openStaged = 1 << 31

type reviver struct {
	fuse.RawFileSystem // the fs package's bridge
	t                  *nodeTable
	gen                uint64 // this worker's generation, from 1

	rmu sync.Mutex // serializes revivals

	// taken is the ring of requests taken, for the supervisor (nil:
	// not a session).
	taken *inflight

	hmu sync.Mutex // guards old
	// old maps an earlier worker's handle to the bridge handle that
	// reopened it here (0: reads need none).
	old map[uint64]uint64
}

var _ fuse.RawFileSystem = (*reviver)(nil)

func newReviver(bridge fuse.RawFileSystem, t *nodeTable, gen uint32) *reviver {
	return &reviver{RawFileSystem: bridge, t: t, gen: uint64(gen) & (1<<24 - 1), old: make(map[uint64]uint64)}
}

// node notes the request h as taken and makes sure the bridge has its
// node.
func (r *reviver) node(cancel <-chan struct{}, h *fuse.InHeader) fuse.Status {
	r.taken.track(h.Unique)
	return r.revive(cancel, h.NodeId)
}

// nodes is node, then revive for each of ids.
func (r *reviver) nodes(cancel <-chan struct{}, h *fuse.InHeader, ids ...uint64) fuse.Status {
	if st := r.node(cancel, h); !st.Ok() {
		return st
	}
	for _, id := range ids {
		if st := r.revive(cancel, id); !st.Ok() {
			return st
		}
	}
	return fuse.OK
}

// revive makes sure the bridge has id, making its node again if the
// kernel got it from an earlier worker.
func (r *reviver) revive(cancel <-chan struct{}, id uint64) fuse.Status {
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

// readable makes sure the bridge has the request's node and turns *h into the
// bridge handle serving reads on it: h's own, or for an earlier
// worker's handle that only read, one opened again here. An earlier
// worker's writer fails with EIO: its unsaved bytes are gone.
func (r *reviver) readable(cancel <-chan struct{}, in *fuse.InHeader, h *uint64, dir bool) fuse.Status {
	if st := r.node(cancel, in); !st.Ok() {
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
	open := &fuse.OpenIn{InHeader: fuse.InHeader{NodeId: in.NodeId}, Flags: syscall.O_RDONLY}
	var out fuse.OpenOut
	var st fuse.Status
	if dir {
		st = r.RawFileSystem.OpenDir(cancel, open, &out)
	} else {
		st = r.RawFileSystem.Open(cancel, open, &out)
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

// durable makes sure the bridge has the request's node and turns *h into the
// bridge handle for a flush or fsync; done means st is the answer, with
// nothing to pass on: an earlier worker's writer lost its unsaved bytes
// (EIO), its reader has nothing to save.
func (r *reviver) durable(cancel <-chan struct{}, in *fuse.InHeader, h *uint64) (st fuse.Status, done bool) {
	if st := r.node(cancel, in); !st.Ok() {
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
	if st := r.node(cancel, h); !st.Ok() {
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

// writes reports whether an open with flags may write.
func writes(flags uint32) bool {
	return flags&syscall.O_ACCMODE != syscall.O_RDONLY || flags&(syscall.O_TRUNC|syscall.O_APPEND) != 0
}

// writable makes sure the bridge has the request's node and turns *h
// into the bridge handle for a write or a lock: EIO for an earlier
// worker's (its unsaved bytes and its locks are gone).
func (r *reviver) writable(cancel <-chan struct{}, in *fuse.InHeader, h *uint64) fuse.Status {
	if st := r.node(cancel, in); !st.Ok() {
		return st
	}
	return r.ownWriter(h)
}

// ownWriter turns *h into the bridge's handle: EIO for an earlier
// worker's.
func (r *reviver) ownWriter(h *uint64) fuse.Status {
	fh, ok := r.ours(*h)
	if !ok {
		return fuse.EIO
	}
	*h = fh
	return fuse.OK
}
