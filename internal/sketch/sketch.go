// Package sketch is a small count-min frequency sketch with saturating
// counters and periodic halving (the aging of TinyLFU), for cache
// admission: it answers "about how often was this seen lately" in a few
// bytes per tracked item.
package sketch

import (
	"math/bits"
	"sync"
)

const (
	depth = 4
	// maxCount is where counters saturate: admission only compares
	// small frequencies, and saturation keeps halving meaningful.
	maxCount = 15
)

// Sketch counts events per 64-bit hash. Estimates never undercount an
// item's additions since the last halving (minus what halving took), and
// overcount only through collisions. It is safe for concurrent use.
type Sketch struct {
	mu    sync.Mutex // guards the fields below
	rows  [depth][]uint8
	mask  uint64
	added int // additions since the last halving
	reset int // additions between halvings
}

// New returns a sketch sized for about items distinct items (at least
// 64); it halves every counter after 10 * items additions.
func New(items int) *Sketch {
	items = max(items, 64)
	width := 1 << bits.Len(uint(items-1)) // next power of two
	s := &Sketch{mask: uint64(width - 1), reset: 10 * items}
	for i := range s.rows {
		s.rows[i] = make([]uint8, width)
	}
	return s
}

// index returns the counter of h in row i: the row's own offset of h
// through the whole SplitMix64 finalizer, so that the rows place items
// independently. (One multiply and shift made each row's index a fixed
// offset of the same product: two items sharing a counter in one row
// often shared it in all, and an item read as often as the rest was
// estimated at twice their count, enough to win admission.)
func (s *Sketch) index(h uint64, i int) uint64 {
	h += uint64(i+1) * 0x9e3779b97f4a7c15
	h = (h ^ h>>30) * 0xbf58476d1ce4e5b9
	h = (h ^ h>>27) * 0x94d049bb133111eb
	return (h ^ h>>31) & s.mask
}

// Add counts one event of h (conservative update: only the smallest
// counters grow, which keeps collisions from inflating estimates).
func (s *Sketch) Add(h uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.estimateLocked(h)
	if m < maxCount {
		for i := range s.rows {
			if c := &s.rows[i][s.index(h, i)]; *c == m {
				*c++
			}
		}
	}
	if s.added++; s.added >= s.reset {
		s.halveLocked()
	}
}

// Estimate returns about how many times h was added lately.
func (s *Sketch) Estimate(h uint64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return int(s.estimateLocked(h))
}

func (s *Sketch) estimateLocked(h uint64) uint8 {
	m := uint8(maxCount)
	for i := range s.rows {
		m = min(m, s.rows[i][s.index(h, i)])
	}
	return m
}

// halveLocked ages every counter: old popularity fades, recent counts
// dominate.
func (s *Sketch) halveLocked() {
	for i := range s.rows {
		for j, c := range s.rows[i] {
			s.rows[i][j] = c >> 1
		}
	}
	s.added = 0
}
