//go:build race

// raceEnabled tells tests that count allocations that the race detector
// is on: sync.Pool then drops items at random, so counts mean nothing.
package sigv4

const raceEnabled = true
