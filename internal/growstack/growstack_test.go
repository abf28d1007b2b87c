// Benchmarks of a fresh goroutine that goes deep, with and without Grow.
package growstack

import (
	"sync"
	"testing"
)

// deep recurses n frames of about 256 bytes each and returns a sum the
// compiler cannot drop.
//
//go:noinline
func deep(n int) int {
	var frame [32]int
	frame[n%32] = n
	if n == 0 {
		return frame[0]
	}
	return deep(n-1) + frame[n%32]
}

// fresh runs f on a new goroutine per iteration, as singleflight does.
func fresh(b *testing.B, f func()) {
	var wg sync.WaitGroup
	for b.Loop() {
		wg.Add(1)
		go func() { defer wg.Done(); f() }()
		wg.Wait()
	}
}

func BenchmarkFreshDeep(b *testing.B) {
	fresh(b, func() { deep(48) })
}

func BenchmarkFreshGrowThenDeep(b *testing.B) {
	fresh(b, func() { Grow(); deep(48) })
}
