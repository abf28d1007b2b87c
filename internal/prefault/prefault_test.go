// Populate maps a fresh buffer's pages (writing it then faults none) and
// leaves its bytes as they were; a small buffer is left alone.
package prefault

import (
	"runtime"
	"syscall"
	"testing"
)

// minorFaults is the process's minor page faults so far.
func minorFaults(t *testing.T) int64 {
	var r syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &r); err != nil {
		t.Fatal(err)
	}
	return r.Minflt
}

func TestPopulateMapsAFreshBuffer(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("MADV_POPULATE_WRITE is Linux's")
	}
	const n = 8 << 20
	b := make([]byte, n)
	if !Populate(b) {
		t.Fatal("the kernel did not populate an 8 MiB buffer (MADV_POPULATE_WRITE needs Linux 5.14)")
	}
	before := minorFaults(t)
	for i := 0; i < n; i += 4096 {
		b[i] = byte(i >> 12)
	}
	if f := minorFaults(t) - before; f > 64 { // the goroutine's stack, the runtime: not b's 2,048 pages
		t.Fatalf("writing a populated 8 MiB buffer took %d page faults", f)
	}
	if !Populate(b) {
		t.Fatal("populating a buffer already mapped failed")
	}
	for i := 0; i < n; i += 4096 {
		if b[i] != byte(i>>12) {
			t.Fatalf("byte %d changed to %d by a second Populate", i, b[i])
		}
	}
}

func TestPopulateLeavesSmallBuffers(t *testing.T) {
	if Populate(make([]byte, Min-1)) {
		t.Fatal("populated a buffer under Min")
	}
}
