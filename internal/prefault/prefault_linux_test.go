//go:build linux

// Populate maps a fresh buffer's pages (writing it then takes a fault
// per page fewer than writing an unpopulated one) and leaves its bytes as
// they were; a small buffer is left alone.
package prefault

import (
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// minorFaults is the process's minor page faults so far.
func minorFaults(t *testing.T) int64 {
	var r syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &r); err != nil {
		t.Fatal(err)
	}
	return r.Minflt
}

// fresh maps n bytes of memory no one has touched: the Go heap may hand
// out pages an earlier test (or -count) already faulted in.
func fresh(t *testing.T, n int) []byte {
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(b) })
	return b
}

// writePages writes one byte of every page of b and returns the page
// faults that took.
func writePages(t *testing.T, b []byte) int64 {
	before := minorFaults(t)
	for i := 0; i < len(b); i += 4096 {
		b[i] = byte(i >> 12)
	}
	return minorFaults(t) - before
}

// TestPopulateMapsAFreshBuffer compares two fresh buffers, one populated:
// writing it takes fewer faults by about its pages (under the race
// detector both also fault in their shadow memory, the same for each).
func TestPopulateMapsAFreshBuffer(t *testing.T) {
	const n, pages = 8 << 20, 8 << 20 / 4096
	populated, plain := fresh(t, n), fresh(t, n)
	if !Populate(populated) {
		t.Fatal("the kernel did not populate an 8 MiB buffer (MADV_POPULATE_WRITE needs Linux 5.14)")
	}
	with, without := writePages(t, populated), writePages(t, plain)
	if without-with < pages*9/10 {
		t.Fatalf("writing a populated 8 MiB buffer took %d page faults, a plain one %d: want about %d fewer", with, without, pages)
	}
	if !Populate(populated) {
		t.Fatal("populating a buffer already mapped failed")
	}
	for i := 0; i < n; i += 4096 {
		if populated[i] != byte(i>>12) {
			t.Fatalf("byte %d changed to %d by a second Populate", i, populated[i])
		}
	}
}

func TestPopulateLeavesSmallBuffers(t *testing.T) {
	if Populate(make([]byte, Min-1)) {
		t.Fatal("populated a buffer under Min")
	}
}
