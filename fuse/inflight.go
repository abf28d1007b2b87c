// The requests a worker has taken, in a ring in shared memory that the
// supervisor reads when the worker dies. On a kernel that cannot resend
// them (before Linux 6.9), the supervisor answers EINTR to every unique
// from the oldest the ring holds to past the newest (a request read but
// not yet noted when the worker died sits just after it), so that no
// caller waits for ever on a request the dead worker had read (callers
// retry an interrupted read or stat: Go and Python do). The kernel
// refuses an answer to a request it has answered already or not handed
// out yet (ENOENT), so the range need not be exact.
package fuse

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	inflightFile = "inflight"
	// inflightSlots bounds the requests remembered: far more than a
	// worker has in hand at once (go-fuse reads at most a few per
	// core, and the kernel sends at most MaxBackground in the
	// background).
	inflightSlots = 4096
	// untracked bounds the requests a worker may have read but not yet
	// noted, answered past the newest it noted.
	untracked = 1024
	// uniqueStep is the kernel's step between request uniques (bit 0
	// marks an interrupt's).
	uniqueStep = 2
)

// inflight is a worker's ring of the requests it took.
type inflight struct {
	slots []uint64 // mapped from the file, shared with the supervisor
	next  atomic.Uint64
}

// openInflight maps the ring in dir.
func openInflight(dir string) (*inflight, error) {
	f, err := os.OpenFile(filepath.Join(dir, inflightFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("fuse: %w", err)
	}
	defer f.Close()
	if err := f.Truncate(inflightSlots * 8); err != nil {
		return nil, fmt.Errorf("fuse: %w", err)
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, inflightSlots*8, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("fuse: map %s: %w", inflightFile, err)
	}
	return &inflight{slots: unsafe.Slice((*uint64)(unsafe.Pointer(&mem[0])), inflightSlots)}, nil
}

// track notes that the worker took request unique (nil: not a session).
func (in *inflight) track(unique uint64) {
	if in == nil {
		return
	}
	atomic.StoreUint64(&in.slots[in.next.Add(1)%inflightSlots], unique)
}

// Interrupt answers EINTR to every request the dead worker had taken and
// the kernel still waits on, then empties the ring. It returns how many
// were waiting. Call it while no worker runs.
func (c *Conn) Interrupt() (int, error) {
	path := filepath.Join(c.state, inflightFile)
	ring, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("fuse: %w", err)
	}
	lo, hi := uint64(math.MaxUint64), uint64(0)
	for i := 0; i+8 <= len(ring); i += 8 {
		if u := binary.LittleEndian.Uint64(ring[i:]); u != 0 {
			lo, hi = min(lo, u), max(hi, u)
		}
	}
	n := 0
	if hi > 0 {
		var h [16]byte
		binary.LittleEndian.PutUint32(h[0:], 16)
		eintr := -int32(syscall.EINTR)
		binary.LittleEndian.PutUint32(h[4:], uint32(eintr))
		for u := lo &^ (uniqueStep - 1); u <= hi+untracked*uniqueStep; u += uniqueStep {
			binary.LittleEndian.PutUint64(h[8:], u)
			if _, err := unix.Write(int(c.file.Fd()), h[:]); err == nil {
				n++
			}
		}
	}
	return n, c.clearInflight()
}

// clearInflight empties the ring for the next worker.
func (c *Conn) clearInflight() error {
	err := os.WriteFile(filepath.Join(c.state, inflightFile), make([]byte, inflightSlots*8), 0o600)
	if err != nil {
		return fmt.Errorf("fuse: %w", err)
	}
	return nil
}
