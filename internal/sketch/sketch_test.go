// Tests of the sketch: counts, saturation, halving, and few overcounts
// when the sketch is sized for the items.
package sketch

import "testing"

func TestCounts(t *testing.T) {
	s := New(1000)
	for i := range 5 {
		if got := s.Estimate(42); got != i {
			t.Fatalf("after %d adds: estimate %d", i, got)
		}
		s.Add(42)
	}
	for range 20 {
		s.Add(7)
	}
	if got := s.Estimate(7); got != maxCount {
		t.Fatalf("saturated estimate %d, want %d", got, maxCount)
	}
	if got := s.Estimate(99); got != 0 {
		t.Fatalf("never added: estimate %d", got)
	}
}

func TestHalving(t *testing.T) {
	s := New(64) // halves after 640 additions
	for range 8 {
		s.Add(1)
	}
	for i := range 640 - 8 {
		s.Add(uint64(1000 + i%100))
	}
	if got := s.Estimate(1); got != 4 {
		t.Fatalf("after halving: estimate %d, want 4", got)
	}
}

func TestFewCollisions(t *testing.T) {
	const n = 10000
	s := New(n)
	for i := range n {
		s.Add(uint64(i) * 0x9e3779b97f4a7c15)
	}
	over := 0
	for i := range n {
		if s.Estimate(uint64(i)*0x9e3779b97f4a7c15) != 1 {
			over++
		}
	}
	if over > n/100 {
		t.Fatalf("%d of %d items overcounted", over, n)
	}
}
