//go:build !race

// Package racedetect tells tests that count allocations whether the race
// detector is on: sync.Pool then drops items at random, and the detector
// allocates of its own, so counts mean nothing.
package racedetect

// On: this binary was built with the race detector.
const On = false
