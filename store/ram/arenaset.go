// The arena's files: a tier's slots spread over several memory files, so
// that chunks are written into them side by side. The kernel writes a
// file one write at a time (under its inode's lock), and a chunk's write
// is where its pages are first touched: in one file, a cold pass of many
// readers queued its fetched chunks behind each other (117 flights
// waiting on the lock at once, their buffers holding the working memory
// full until reads were refused) and the waiters spun on the cores.
package ram

import "sync/atomic"

// arenaFiles is how many memory files an arena set writes side by side.
// Sixteen writers of 1 MiB chunks (BenchmarkArenaPutParallel) took
// 546-661 µs and 0.99-1.11 ms of CPU per MiB with one file, 309-341 µs
// and 0.59-0.67 ms with eight.
const arenaFiles = 8

// arenaSet is a tier's arena: its slots in arenaFiles files.
type arenaSet struct {
	files []*arena
	next  atomic.Uint32 // where the next placement starts looking
}

// newArenaSet returns the arena of a tier of capacity bytes, its address
// space shared among its files, or an error where the kernel cannot give
// one (the tier then keeps every chunk on the heap).
func newArenaSet(capacity int64) (*arenaSet, error) {
	span := max(capacity*arenaSpanPerByte, arenaMinSpan) / arenaFiles
	span = max(span-span%ArenaMax, ArenaMax)
	s := &arenaSet{}
	for range arenaFiles {
		a, err := newArena(span)
		if err != nil {
			s.close()
			return nil, err
		}
		s.files = append(s.files, a)
	}
	return s, nil
}

// place copies b into a slot of one of the files, or returns nil where
// none took it (arena.place says when). Placements start at successive
// files, so concurrent writes land in different ones, and a file with an
// emptied slot of b's class comes first: its addresses are reused before
// new ones are taken.
func (s *arenaSet) place(b []byte) *slot {
	c, n := classOf(len(b)), uint32(len(s.files))
	start := s.next.Add(1)
	for i := range n {
		if a := s.files[(start+i)%n]; a.hasFree(c) {
			if sl := a.place(b); sl != nil {
				return sl
			}
		}
	}
	for i := range n {
		if sl := s.files[(start+i)%n].place(b); sl != nil {
			return sl
		}
	}
	return nil
}

// hasFree reports whether the file has an emptied slot of class c.
func (a *arena) hasFree(c int) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.free[c]) > 0
}

// sum adds up f over the files.
func (s *arenaSet) sum(f func(*arena) int64) int64 {
	var n int64
	for _, a := range s.files {
		n += f(a)
	}
	return n
}

// pages is how many pages the files hold (written, not punched out yet).
func (s *arenaSet) pages() int64 { return s.sum(func(a *arena) int64 { return a.pages.Load() }) }

// lent is how many leases are out on the files' slots.
func (s *arenaSet) lent() int64 { return s.sum(func(a *arena) int64 { return a.lent.Load() }) }

// close is the tier letting go: each file goes once no lease is left on it.
func (s *arenaSet) close() {
	for _, a := range s.files {
		a.close()
	}
}
