//go:build !linux

// Populate elsewhere: pages fault in as they are written.
package prefault

// Populate does nothing off Linux.
func Populate(b []byte) bool { return false }
