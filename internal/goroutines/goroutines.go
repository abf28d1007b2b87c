// Package goroutines helps tests check that work they started has ended:
// goroutines wind down asynchronously, so a count is polled, not read once.
package goroutines

import (
	"runtime"
	"time"
)

// Settled polls until the goroutine count is at most want (or, with want
// 0, stops changing), or limit passes, and returns it.
func Settled(want int, limit time.Duration) int {
	deadline := time.Now().Add(limit)
	prev := -1
	for {
		n := runtime.NumGoroutine()
		if (want > 0 && n <= want) || (want == 0 && n == prev) || time.Now().After(deadline) {
			return n
		}
		prev = n
		time.Sleep(50 * time.Millisecond) // polling interval
	}
}
