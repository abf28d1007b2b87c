// procCPU reads the same account of a process as getrusage does.
package main

import (
	"os"
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
