// procCPU reads the same account of a process as getrusage does, and
// procFaults counts the pages it touches fresh.
package main

import (
	"os"
	"syscall"
	"testing"
	"time"
)

func TestProcCPU(t *testing.T) {
	start := selfCPU()
	// Burn CPU until getrusage has counted 300 ms of it.
	x := 0
	for selfCPU()-start < 300*time.Millisecond {
		for i := range 1_000_000 {
			x += i
		}
	}
	self := selfCPU()
	proc, err := procCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// /proc counts whole ticks; the burn ran between the two reads.
	if d := self - proc; d < -2*clockTick || d > 2*clockTick+100*time.Millisecond {
		t.Fatalf("procCPU = %v, getrusage = %v (x %d)", proc, self, x)
	}
	if _, err := procCPU(-1); err == nil {
		t.Fatal("procCPU of no process: no error")
	}
}

// TestProcFaultsCountsFreshPages: touching pages the kernel has just
// mapped shows as that many minor faults.
func TestProcFaultsCountsFreshPages(t *testing.T) {
	const pages = 4096
	mem, err := syscall.Mmap(-1, 0, pages*4096, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(mem)
	before, err := procFaults(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(mem); i += 4096 {
		mem[i] = 1
	}
	after, err := procFaults(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// Huge pages would fault less often; 1/512 of the pages is their floor.
	if got := after - before; got < pages/512 {
		t.Fatalf("%d faults for %d fresh pages", got, pages)
	}
}
