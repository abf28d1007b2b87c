// The arena: where the RAM tier keeps chunks the kernel can send by
// reference. A chunk of ArenaMin to ArenaMax bytes lives in a slot of a
// memory file (a memfd) instead of the Go heap, so a server sends it to a
// socket with sendfile: the kernel takes references to the file's pages
// instead of copying the bytes out of user memory (a writev of a warm
// 100 KiB body copies it; nginx sends its cache by reference).
//
// Why the file never corrupts a send: a page handed to sendfile is held by
// the socket until sent, by reference. A slot is only ever emptied by
// punching a hole (which takes its pages out of the file; a page a socket
// holds lives on, unchanged, with the socket) and written again into
// fresh pages: never rewritten in place. Slots are whole pages, and huge
// pages are refused (openArena), so a punch never zeroes a shared page.
//
// Why no reader sees a slot emptied under it: the tier lends a slot's
// bytes (Lend) only with a lease, and a slot is emptied only once it is
// out of the tier (evicted, deleted, closed) and its last lease is
// released. Get and Peek, which promise bytes with no release, return a
// copy of an arena chunk.
package ram

import (
	"sync"
	"sync/atomic"
)

const (
	// ArenaMin is the smallest chunk kept in the arena, and the smallest
	// body a server sends from it (membody.FileMin). A sendfile needs the
	// head sent by a system call of its own, which costs about what
	// copying a 32-64 KiB body does; from 64 KiB the send by reference
	// pays (node CPU per warm 100 KiB GET 0.84-0.98x of a writev's, 256
	// KiB 0.86-0.90x, 1 MiB 0.66-0.71x).
	ArenaMin = 64 << 10
	// ArenaMax is the largest: a checkpoint's chunks (8 MiB by default)
	// are sent by reference too, a restore's spans from their slot. A
	// Put copies an arena chunk into its slot where the heap kept the
	// flight's buffer, which then serves the next flight instead: fresh
	// pages are written either way. Chunks of a larger --chunk-size stay
	// on the heap.
	ArenaMax = 16 << 20
	pageSize = 4096
	// arenaSpanPerByte is the arena's address space per byte of the
	// tier's capacity: slots are reused by size class, so a workload whose
	// sizes drift leaves some classes' slots empty (no memory, only
	// addresses). A tier whose span runs out keeps chunks on the heap.
	arenaSpanPerByte = 4
	arenaMinSpan     = 256 << 20
)

// classPages are the slot sizes in pages, four per doubling: a chunk takes
// the smallest that holds it, so an emptied slot serves any chunk of its
// class. (Only the chunk's own pages are ever written: the rest of its
// slot costs addresses, not memory.)
var classPages = func() []int64 {
	var c []int64
	for p := int64(ArenaMin / pageSize); p < ArenaMax/pageSize; p *= 2 {
		c = append(c, p, p*5/4, p*3/2, p*7/4)
	}
	return append(c, ArenaMax/pageSize)
}()

// classOf returns the class of a chunk of n bytes (ArenaMin <= n <=
// ArenaMax).
func classOf(n int) int {
	p := (int64(n) + pageSize - 1) / pageSize
	for i, c := range classPages {
		if c >= p {
			return i
		}
	}
	return len(classPages) - 1
}

// arena hands out slots of one memory file (a tier has arenaFiles of
// them: arenaset.go).
type arena struct {
	os   *osArena
	span int64 // bytes of address space

	mu   sync.Mutex
	free [][]int64 // per class: offsets of empty slots
	top  int64     // offset of the first byte never handed out

	// leases counts the file's users: leases not yet released, writes
	// and punches under way (hold), and one while the tier is open. The
	// file and its mapping go when it reaches zero, and are never used
	// again: hold refuses from zero.
	leases atomic.Int64
	lent   atomic.Int64 // leases not yet released
	slots  atomic.Int64 // slots handed out and not yet emptied
	pages  atomic.Int64 // pages written and not yet punched
}

// newArena returns an arena of one memory file of span bytes (a
// multiple of ArenaMax), or an error where the kernel cannot give one.
func newArena(span int64) (*arena, error) {
	o, err := openArena(span)
	if err != nil {
		return nil, err
	}
	a := &arena{os: o, span: span, free: make([][]int64, len(classPages))}
	a.leases.Store(1)
	return a, nil
}

// slot is a chunk's place in the arena. state counts the leases on it;
// dead is added once, when the chunk leaves the tier, and whoever brings
// state to exactly dead empties the slot.
type slot struct {
	a     *arena
	off   int64
	n     int
	class int
	state atomic.Int64
}

const dead = 1 << 40

// place copies b into a new slot, or returns nil if the arena has no
// room left in its span, the write fails (the caller keeps b itself) or
// the tier closed (the file may be gone).
func (a *arena) place(b []byte) *slot {
	if !a.hold() {
		return nil
	}
	defer a.unlease()
	c := classOf(len(b))
	a.mu.Lock()
	var off int64
	if f := a.free[c]; len(f) > 0 {
		off, a.free[c] = f[len(f)-1], f[:len(f)-1]
	} else if size := classPages[c] * pageSize; a.top+size <= a.span {
		off, a.top = a.top, a.top+size
	} else {
		a.mu.Unlock()
		return nil
	}
	a.mu.Unlock()
	s := &slot{a: a, off: off, n: len(b), class: c}
	if err := a.os.write(off, b); err != nil {
		a.recycle(s) // what the write put there goes
		return nil
	}
	a.slots.Add(1)
	a.pages.Add(s.pages())
	return s
}

// fileBytes is the memory the tier's arena holds: pages written and not
// punched out yet (those of chunks evicted but still leased included).
func (t *Tier) fileBytes() int64 {
	if t.arena == nil {
		return 0
	}
	return t.arena.pages() * pageSize
}

// pages is how many pages the slot's chunk was written to.
func (s *slot) pages() int64 { return (int64(s.n) + pageSize - 1) / pageSize }

// bytes is the slot's chunk as the mapping shows it. Valid while the
// caller holds a lease, or the slot is in the tier under its shard lock.
func (s *slot) bytes() []byte { return s.a.os.mem[s.off : s.off+int64(s.n) : s.off+int64(s.n)] }

// lend takes a lease on the slot; caller holds the lock of the shard
// whose entry holds it (so it is not dead).
func (s *slot) lend() {
	s.a.leases.Add(1)
	s.a.lent.Add(1)
	s.state.Add(1)
}

// Release ends a lease (store.Lease): the last one on a slot out of the
// tier empties it.
func (s *slot) Release() {
	if s.state.Add(-1) == dead {
		s.empty()
	}
	s.a.lent.Add(-1)
	s.a.unlease()
}

// File returns the memory file and the chunk's offset in it
// (store.FileSpan): a lease holder may have the kernel send from there.
func (s *slot) File() (fd uintptr, off int64) { return uintptr(s.a.os.fd), s.off }

// drop marks the slot's chunk out of the tier; the slot is emptied now if
// no lease holds it, else by the last Release.
func (s *slot) drop() {
	if s.state.Add(dead) == dead {
		s.empty()
	}
}

// empty takes the slot's chunk out of the arena.
func (s *slot) empty() {
	s.a.slots.Add(-1)
	s.a.pages.Add(-s.pages())
	s.a.recycle(s)
}

// recycle punches the slot's pages out and gives the slot back to its
// class. A slot the punch fails on is never reused: its offset would be
// written again over pages a send may still hold. Once the file is gone
// (the tier closed) there is nothing to punch.
func (a *arena) recycle(s *slot) {
	if !a.hold() {
		return
	}
	defer a.unlease()
	if err := a.os.punch(s.off, s.pages()*pageSize); err != nil {
		return
	}
	a.mu.Lock()
	a.free[s.class] = append(a.free[s.class], s.off)
	a.mu.Unlock()
}

// hold counts one more user of the mapping unless it has none left (it
// is unmapped, or about to be), and reports whether it did.
func (a *arena) hold() bool {
	for {
		n := a.leases.Load()
		if n == 0 {
			return false
		}
		if a.leases.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// unlease drops one count of the mapping's users.
func (a *arena) unlease() {
	if a.leases.Add(-1) == 0 {
		a.os.close()
	}
}

// close is the tier letting go: the mapping goes once no lease is left.
func (a *arena) close() { a.unlease() }
