//go:build !race

// raceEnabled: see race_on_test.go.
package sigv4

const raceEnabled = false
