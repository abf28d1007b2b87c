// Tests of procmem against a memory file of this process.
package procmem

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestMemfdBytes: a memory file's written pages count, its holes do not,
// and a second descriptor of it does not count it twice.
func TestMemfdBytes(t *testing.T) {
	before, err := MemfdBytes(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	fd, err := unix.MemfdCreate("procmem-test", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Ftruncate(fd, 64<<20); err != nil { // a hole: no memory
		t.Fatal(err)
	}
	if _, err := unix.Pwrite(fd, make([]byte, 1<<20), 8<<20); err != nil {
		t.Fatal(err)
	}
	dup, err := unix.Dup(fd)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dup)
	got, err := MemfdBytes(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if d := got - before; d != 1<<20 {
		t.Fatalf("a memory file with 1 MiB written counts %d bytes", d)
	}
}
