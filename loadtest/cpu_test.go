// procCPU reads the same account of a process as getrusage does,
// procFaults counts the pages it touches fresh and procSwitches the
// times its threads sleep.
package main

import (
	"os"
	"runtime"
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

// TestProcSwitchesCountsSleeps: a thread that goes to sleep shows as
// context switches of its process.
func TestProcSwitchesCountsSleeps(t *testing.T) {
	before, err := procSwitches(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan int64)
	go func() {
		runtime.LockOSThread() // one thread that sleeps and wakes 20 times
		defer runtime.UnlockOSThread()
		for range 20 {
			time.Sleep(time.Millisecond)
		}
		n, _ := procSwitches(os.Getpid())
		done <- n
	}()
	if after := <-done; after-before < 20 {
		t.Fatalf("%d context switches across 20 sleeps (%d, then %d)", after-before, before, after)
	}
	if _, err := procSwitches(-1); err == nil {
		t.Fatal("procSwitches of no process: no error")
	}
}

// TestProcRunTimeCountsWork: the run time of this process grows by at
// least the CPU a busy loop spends, as getrusage counts it, and it names
// a missing process as an error.
func TestProcRunTimeCountsWork(t *testing.T) {
	before, err := procRunTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	self0 := selfCPU()
	x := 0
	for selfCPU()-self0 < 50*time.Millisecond {
		for i := range 100_000 {
			x ^= i
		}
	}
	spent := selfCPU() - self0
	after, err := procRunTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// getrusage ticks per thread at the scheduler's tick; allow it one
	// tick's slack on each side.
	if got := after - before; got < spent-10*time.Millisecond {
		t.Fatalf("run time grew %v while getrusage counted %v of work (x=%d)", got, spent, x)
	}
	if _, err := procRunTime(-1); err == nil {
		t.Fatal("procRunTime of no process: no error")
	}
}
