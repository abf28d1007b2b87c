//go:build race

package racedetect

// On: this binary was built with the race detector.
const On = true
