// Tests of the reviver's arithmetic, without a kernel: how a handle
// carries its worker's generation and whether it wrote, the generation's
// wrap at 24 bits, and how an earlier worker's handle is turned into
// one of this worker's bridge (reopened, refused with EIO, or dropped).
package fuse

import (
	"math"
	"slices"
	"syscall"
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// kernelHandle is the handle the kernel holds for bridge handle idx of
// worker gen, as revive.go lays it out: generation from bit 40, the
// writer bit at 32, the bridge's number in the low 32 bits.
func kernelHandle(gen uint64, writer bool, idx uint64) uint64 {
	h := gen<<40 | idx
	if writer {
		h |= 1 << 32
	}
	return h
}

func TestReviverGeneration(t *testing.T) {
	for _, c := range []struct {
		gen  uint32
		want uint64
	}{
		{0, 0},
		{1, 1}, // a plain mount, and a session's first worker
		{2, 2},
		{1<<24 - 1, 0xFF_FFFF}, // the largest that fits above bit 40
		{1 << 24, 0},           // wraps
		{1<<24 + 1, 1},
		{math.MaxUint32, 0xFF_FFFF},
	} {
		if got := newReviver(nil, nil, c.gen).gen; got != c.want {
			t.Errorf("newReviver(gen %d).gen = %#x, want %#x", c.gen, got, c.want)
		}
	}
}

func TestHandleEncoding(t *testing.T) {
	for _, c := range []struct {
		gen    uint32
		fh     uint64 // the bridge's handle
		writer bool
		want   uint64 // the kernel's
	}{
		{1, 0, false, 0}, // no handle stays none
		{1, 0, true, 0},
		{1, 1, false, 0x0000_0100_0000_0001},
		{1, 1, true, 0x0000_0101_0000_0001},
		{1, 0xFFFF_FFFF, true, 0x0000_0101_FFFF_FFFF},
		// A bridge number past 32 bits keeps its low 32: its bit
		// 32 must not pass for the writer bit.
		{1, 1<<32 | 3, false, 0x0000_0100_0000_0003},
		{1, 1 << 32, false, 0x0000_0100_0000_0000},
		{2, 7, false, 0x0000_0200_0000_0007},
		{1<<24 - 1, 2, false, 0xFFFF_FF00_0000_0002},
		{1<<24 - 1, 0xFFFF_FFFF, true, 0xFFFF_FF01_FFFF_FFFF},
		{1 << 24, 5, false, 0x0000_0000_0000_0005}, // generation wrapped to 0
		{1<<24 + 2, 7, true, 0x0000_0201_0000_0007},
	} {
		r := newReviver(nil, nil, c.gen)
		h := r.handle(c.fh, c.writer)
		if h != c.want {
			t.Errorf("gen %d: handle(%#x, writer %v) = %#016x, want %#016x", c.gen, c.fh, c.writer, h, c.want)
			continue
		}
		fh, ok := r.ours(h)
		if !ok || fh != c.fh&0xFFFF_FFFF {
			t.Errorf("gen %d: ours(%#016x) = %#x, %v; want %#x, true", c.gen, h, fh, ok, c.fh&0xFFFF_FFFF)
		}
		if h != 0 && (h&fhWriter != 0) != c.writer {
			t.Errorf("gen %d: handle %#016x writer bit %v, want %v", c.gen, h, h&fhWriter != 0, c.writer)
		}
		next := newReviver(nil, nil, c.gen+1)
		if _, ok := next.ours(h); ok && h != 0 {
			t.Errorf("gen %d: the next worker takes handle %#016x for its own", c.gen+1, h)
		}
	}
}

func TestHandleOwnership(t *testing.T) {
	for _, c := range []struct {
		name   string
		gen    uint32
		h      uint64
		wantFh uint64
		wantOk bool
	}{
		{"none", 5, 0, 0, true},
		{"own reader", 5, kernelHandle(5, false, 7), 7, true},
		{"own writer", 5, kernelHandle(5, true, 7), 7, true},
		{"own, largest number", 5, kernelHandle(5, true, 0xFFFF_FFFF), 0xFFFF_FFFF, true},
		{"earlier worker's reader", 5, kernelHandle(4, false, 7), 7, false},
		{"earlier worker's writer", 5, kernelHandle(4, true, 7), 7, false},
		{"first worker's, seen by the largest generation", 1<<24 - 1, kernelHandle(1, false, 7), 7, false},
		{"largest generation's, seen by the next (wrapped to 0)", 1 << 24, kernelHandle(1<<24-1, false, 7), 7, false},
		{"a number without a generation", 1, 7, 7, false},
		// Generations 2^24 apart share their handles: 16M restarts
		// of one mount with a handle of the first still open.
		{"aliased across the wrap", 1<<24 + 5, kernelHandle(5, false, 7), 7, true},
		{"not aliased short of the wrap", 1<<23 + 5, kernelHandle(5, false, 7), 7, false},
	} {
		fh, ok := newReviver(nil, nil, c.gen).ours(c.h)
		if fh != c.wantFh || ok != c.wantOk {
			t.Errorf("%s: ours(%#016x) at gen %d = %#x, %v; want %#x, %v", c.name, c.h, c.gen, fh, ok, c.wantFh, c.wantOk)
		}
	}
}

func TestWrites(t *testing.T) {
	for _, c := range []struct {
		flags uint32
		want  bool
	}{
		{syscall.O_RDONLY, false},
		{syscall.O_RDONLY | syscall.O_NONBLOCK | syscall.O_CLOEXEC, false},
		{syscall.O_WRONLY, true},
		{syscall.O_RDWR, true},
		{syscall.O_RDONLY | syscall.O_TRUNC, true},
		{syscall.O_RDONLY | syscall.O_APPEND, true},
	} {
		if got := writes(c.flags); got != c.want {
			t.Errorf("writes(%#o) = %v, want %v", c.flags, got, c.want)
		}
	}
}

// fakeBridge stands for go-fuse's node tree behind the reviver: it
// hands out handles from next and records the handle each passed-on
// request carries. Operations it does not define answer ENOSYS.
type fakeBridge struct {
	fuse.RawFileSystem
	next      uint64 // the next handle Open or OpenDir returns
	noOpen    bool   // Open answers ENOSYS, as a read-only mount's
	openFlags uint32 // what Open returns in OpenFlags
	opens     int    // Open and OpenDir calls
	seen      []uint64
	released  []uint64
}

func newFakeBridge() *fakeBridge {
	return &fakeBridge{RawFileSystem: fuse.NewDefaultRawFileSystem(), next: 100}
}

func (b *fakeBridge) Open(_ <-chan struct{}, _ *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	b.opens++
	if b.noOpen {
		return fuse.ENOSYS
	}
	out.Fh, out.OpenFlags = b.next, b.openFlags
	b.next++
	return fuse.OK
}

func (b *fakeBridge) OpenDir(_ <-chan struct{}, _ *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	b.opens++
	out.Fh = b.next
	b.next++
	return fuse.OK
}

func (b *fakeBridge) Create(_ <-chan struct{}, _ *fuse.CreateIn, _ string, out *fuse.CreateOut) fuse.Status {
	out.Fh = b.next
	b.next++
	return fuse.OK
}

func (b *fakeBridge) Read(_ <-chan struct{}, in *fuse.ReadIn, _ []byte) (fuse.ReadResult, fuse.Status) {
	b.seen = append(b.seen, in.Fh)
	return fuse.ReadResultData(nil), fuse.OK
}

func (b *fakeBridge) ReadDir(_ <-chan struct{}, in *fuse.ReadIn, _ *fuse.DirEntryList) fuse.Status {
	b.seen = append(b.seen, in.Fh)
	return fuse.OK
}

func (b *fakeBridge) Write(_ <-chan struct{}, in *fuse.WriteIn, _ []byte) (uint32, fuse.Status) {
	b.seen = append(b.seen, in.Fh)
	return 0, fuse.OK
}

func (b *fakeBridge) Flush(_ <-chan struct{}, in *fuse.FlushIn) fuse.Status {
	b.seen = append(b.seen, in.Fh)
	return fuse.OK
}

func (b *fakeBridge) GetAttr(_ <-chan struct{}, in *fuse.GetAttrIn, _ *fuse.AttrOut) fuse.Status {
	b.seen = append(b.seen, in.Fh_, uint64(in.Flags_))
	return fuse.OK
}

func (b *fakeBridge) SetAttr(_ <-chan struct{}, in *fuse.SetAttrIn, _ *fuse.AttrOut) fuse.Status {
	b.seen = append(b.seen, in.Fh, uint64(in.Valid))
	return fuse.OK
}

func (b *fakeBridge) Release(_ <-chan struct{}, in *fuse.ReleaseIn) {
	b.released = append(b.released, in.Fh)
}

// The requests below name the root, which the bridge always has.
var rootHeader = fuse.InHeader{NodeId: fuse.FUSE_ROOT_ID}

func TestReviverTranslatesHandles(t *testing.T) {
	const gen = 5
	var (
		ownReader     = kernelHandle(gen, false, 7)
		ownWriter     = kernelHandle(gen, true, 7)
		earlierReader = kernelHandle(gen-1, false, 7)
		earlierWriter = kernelHandle(gen-1, true, 7)
	)
	read := func(r *reviver, h uint64) fuse.Status {
		_, st := r.Read(nil, &fuse.ReadIn{InHeader: rootHeader, Fh: h}, nil)
		return st
	}
	readDir := func(r *reviver, h uint64) fuse.Status {
		return r.ReadDir(nil, &fuse.ReadIn{InHeader: rootHeader, Fh: h}, nil)
	}
	write := func(r *reviver, h uint64) fuse.Status {
		_, st := r.Write(nil, &fuse.WriteIn{InHeader: rootHeader, Fh: h}, nil)
		return st
	}
	flush := func(r *reviver, h uint64) fuse.Status {
		return r.Flush(nil, &fuse.FlushIn{InHeader: rootHeader, Fh: h})
	}
	getAttr := func(r *reviver, h uint64) fuse.Status {
		return r.GetAttr(nil, &fuse.GetAttrIn{InHeader: rootHeader, Flags_: fuse.FUSE_GETATTR_FH, Fh_: h}, &fuse.AttrOut{})
	}
	setAttr := func(r *reviver, h uint64) fuse.Status {
		in := &fuse.SetAttrIn{SetAttrInCommon: fuse.SetAttrInCommon{InHeader: rootHeader, Valid: fuse.FATTR_FH | fuse.FATTR_SIZE, Fh: h}}
		return r.SetAttr(nil, in, &fuse.AttrOut{})
	}
	const (
		fhFlag   = fuse.FUSE_GETATTR_FH
		sizeOnly = fuse.FATTR_SIZE
		withFh   = fuse.FATTR_FH | fuse.FATTR_SIZE
	)
	for _, c := range []struct {
		name   string
		op     func(*reviver, uint64) fuse.Status
		h      uint64
		noOpen bool
		want   fuse.Status
		seen   []uint64 // what the bridge got (nil: not called)
		opens  int
	}{
		{"read, no handle", read, 0, false, fuse.OK, []uint64{0}, 0},
		{"read, own reader", read, ownReader, false, fuse.OK, []uint64{7}, 0},
		{"read, own writer", read, ownWriter, false, fuse.OK, []uint64{7}, 0},
		{"read, earlier reader: reopened", read, earlierReader, false, fuse.OK, []uint64{100}, 1},
		{"read, earlier reader on a read-only mount", read, earlierReader, true, fuse.OK, []uint64{0}, 1},
		{"read, earlier writer: its stage is gone", read, earlierWriter, false, fuse.EIO, nil, 0},
		{"readdir, own", readDir, ownReader, false, fuse.OK, []uint64{7}, 0},
		{"readdir, earlier: reopened", readDir, earlierReader, false, fuse.OK, []uint64{100}, 1},
		{"write, own writer", write, ownWriter, false, fuse.OK, []uint64{7}, 0},
		{"write, earlier writer", write, earlierWriter, false, fuse.EIO, nil, 0},
		{"write, earlier reader", write, earlierReader, false, fuse.EIO, nil, 0},
		{"flush, own writer", flush, ownWriter, false, fuse.OK, []uint64{7}, 0},
		{"flush, earlier writer: unsaved bytes lost", flush, earlierWriter, false, fuse.EIO, nil, 0},
		{"flush, earlier reader: nothing to save", flush, earlierReader, false, fuse.OK, nil, 0},
		{"getattr, own handle", getAttr, ownWriter, false, fuse.OK, []uint64{7, fhFlag}, 0},
		{"getattr, earlier handle dropped", getAttr, earlierWriter, false, fuse.OK, []uint64{0, 0}, 0},
		{"setattr, own handle", setAttr, ownWriter, false, fuse.OK, []uint64{7, withFh}, 0},
		{"setattr, earlier reader's handle dropped", setAttr, earlierReader, false, fuse.OK, []uint64{0, sizeOnly}, 0},
		{"setattr, earlier writer", setAttr, earlierWriter, false, fuse.EIO, nil, 0},
	} {
		b := newFakeBridge()
		b.noOpen = c.noOpen
		r := newReviver(b, newNodeTable(false, nil), gen)
		if st := c.op(r, c.h); st != c.want {
			t.Errorf("%s: status %v, want %v", c.name, st, c.want)
		}
		if !slices.Equal(b.seen, c.seen) || b.opens != c.opens {
			t.Errorf("%s: the bridge got %v after %d opens, want %v after %d", c.name, b.seen, b.opens, c.seen, c.opens)
		}
	}
}

// An earlier worker's reader is reopened once, used until its release,
// and released on the bridge under the new number; a release forgets
// the mapping, even one that needed no handle.
func TestReviverMapsEarlierHandles(t *testing.T) {
	for _, noOpen := range []bool{false, true} {
		b := newFakeBridge()
		b.noOpen = noOpen
		r := newReviver(b, newNodeTable(false, nil), 3)
		old := kernelHandle(2, false, 9)
		read := func() { r.Read(nil, &fuse.ReadIn{InHeader: rootHeader, Fh: old}, nil) }
		read()
		read()
		want := uint64(100)
		if noOpen {
			want = 0
		}
		if b.opens != 1 || !slices.Equal(b.seen, []uint64{want, want}) {
			t.Fatalf("noOpen %v: two reads of an earlier handle: %d opens, bridge saw %v", noOpen, b.opens, b.seen)
		}
		r.Release(nil, &fuse.ReleaseIn{InHeader: rootHeader, Fh: old})
		if wantRel := []uint64{100}; !noOpen && !slices.Equal(b.released, wantRel) {
			t.Fatalf("release of the reopened handle: bridge released %v, want %v", b.released, wantRel)
		}
		if noOpen && len(b.released) != 0 {
			t.Fatalf("release of a handle-less reopen released %v on the bridge", b.released)
		}
		if len(r.old) != 0 {
			t.Fatalf("noOpen %v: the mapping outlived the release: %v", noOpen, r.old)
		}
		read()
		if b.opens != 2 {
			t.Fatalf("noOpen %v: a read after the release was not reopened (%d opens)", noOpen, b.opens)
		}
	}
	// Released without ever being used here: nothing to release.
	b := newFakeBridge()
	r := newReviver(b, newNodeTable(false, nil), 3)
	r.Release(nil, &fuse.ReleaseIn{InHeader: rootHeader, Fh: kernelHandle(2, true, 9)})
	r.Release(nil, &fuse.ReleaseIn{InHeader: rootHeader, Fh: kernelHandle(3, false, 4)})
	if !slices.Equal(b.released, []uint64{4}) {
		t.Fatalf("releases of an unused earlier handle and an own one: bridge released %v, want [4]", b.released)
	}
}

// Handles handed to the kernel carry this worker's generation and
// whether they may write: by the open's flags, or because the bridge
// marked the handle as one on a stage (openStaged, never shown to the
// kernel).
func TestReviverHandsOutHandles(t *testing.T) {
	const gen = 1<<24 - 1
	for _, c := range []struct {
		name      string
		flags     uint32
		staged    bool
		want      uint64
		wantFlags uint32
	}{
		{"read-only open", syscall.O_RDONLY, false, 0xFFFF_FF00_0000_0064, fuse.FOPEN_KEEP_CACHE},
		{"write open", syscall.O_WRONLY, false, 0xFFFF_FF01_0000_0064, fuse.FOPEN_KEEP_CACHE},
		{"truncating open", syscall.O_RDONLY | syscall.O_TRUNC, false, 0xFFFF_FF01_0000_0064, fuse.FOPEN_KEEP_CACHE},
		{"read-only open of a stage", syscall.O_RDONLY, true, 0xFFFF_FF01_0000_0064, fuse.FOPEN_KEEP_CACHE},
	} {
		b := newFakeBridge()
		b.openFlags = fuse.FOPEN_KEEP_CACHE
		if c.staged {
			b.openFlags |= openStaged
		}
		r := newReviver(b, newNodeTable(false, nil), gen)
		var out fuse.OpenOut
		if st := r.Open(nil, &fuse.OpenIn{InHeader: rootHeader, Flags: c.flags}, &out); !st.Ok() {
			t.Fatalf("%s: %v", c.name, st)
		}
		if out.Fh != c.want || out.OpenFlags != c.wantFlags {
			t.Errorf("%s: handle %#016x, flags %#x; want %#016x, %#x", c.name, out.Fh, out.OpenFlags, c.want, c.wantFlags)
		}
	}
	b := newFakeBridge()
	r := newReviver(b, newNodeTable(false, nil), gen)
	var dir fuse.OpenOut
	r.OpenDir(nil, &fuse.OpenIn{InHeader: rootHeader}, &dir)
	var created fuse.CreateOut
	r.Create(nil, &fuse.CreateIn{InHeader: rootHeader}, "f", &created)
	if dir.Fh != 0xFFFF_FF00_0000_0064 || created.Fh != 0xFFFF_FF01_0000_0065 {
		t.Errorf("opendir handle %#016x, create handle %#016x; want a reader's and a writer's", dir.Fh, created.Fh)
	}
}
