//go:build linux

// Chunk files written past the page cache (O_DIRECT): a chunk file holds
// a chunk the RAM tier has just taken, so caching its bytes a second time
// in the kernel's page cache buys nothing, and writing through it costs
// the node a copy per byte, a page allocation per 4 KiB and, later, the
// kernel's writeback on top. Measured on this project's 2-core VM (ext4 on
// virtio, 1 GiB in 8 MiB files, CPU of the whole machine, sync included):
// buffered 0.85-2.6 s, O_DIRECT 0.17-0.18 s. A disk fill after a
// checkpoint save competes with the readers for exactly that CPU.
//
// Only chunk files (chunks of SmallMax or more) go out so. Chunks packed
// into segments stay buffered: written directly, on block boundaries,
// 100 KiB chunks cost the node more, not less (a cold pass of 10,000 of
// them: 456-495 µs of node CPU per GET against 310-357), since each small
// direct write is a device request of its own where writeback merges a
// segment's chunks into large ones.
package disk

import (
	"errors"
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/granary-dev/granary/store"
)

// directAlign is the alignment O_DIRECT asks of a write's memory, file
// offset and length: the largest logical block size in use (4 KiB
// sectors), which also satisfies 512-byte devices.
const directAlign = 4096

// directWriter writes chunk files with O_DIRECT until a filesystem refuses
// it (tmpfs, some FUSE and network filesystems), then through the page
// cache, as before. Safe for concurrent use.
type directWriter struct {
	refused atomic.Bool // the filesystem refused O_DIRECT once: never asked again
}

// aligned reports whether data can go out with O_DIRECT: at least one
// whole block, at a block-aligned address (Go allocates large buffers,
// as chunk buffers are, page-aligned).
func aligned(data []byte) bool {
	return len(data) >= directAlign && uintptr(unsafe.Pointer(unsafe.SliceData(data)))%directAlign == 0
}

// create creates path (it must not exist) for data, with O_DIRECT where
// the data and the filesystem allow it; direct says which.
func (w *directWriter) create(path string, data []byte) (f *os.File, direct bool, err error) {
	const flags = os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if !w.refused.Load() && aligned(data) {
		f, err = os.OpenFile(path, flags|syscall.O_DIRECT, store.PrivateFileMode)
		if err == nil || !w.refusedBy(err) {
			return f, err == nil, err
		}
	}
	f, err = os.OpenFile(path, flags, store.PrivateFileMode)
	return f, false, err
}

// refusedBy notes err, if it is the kernel refusing O_DIRECT, and
// reports whether it was.
func (w *directWriter) refusedBy(err error) bool {
	if errors.Is(err, syscall.EINVAL) {
		w.refused.Store(true)
		return true
	}
	return false
}

// write writes data to f (new, from create) from offset 0; direct says f
// was opened with O_DIRECT. Its whole blocks go out directly; a tail
// shorter than a block goes through the page cache, and so does all of
// it if the device asks for more alignment than directAlign.
func (w *directWriter) write(f *os.File, data []byte, direct bool) error {
	whole := 0
	if direct {
		whole = len(data) &^ (directAlign - 1)
		if _, err := f.WriteAt(data[:whole], 0); err != nil {
			if !w.refusedBy(err) {
				return err
			}
			whole = 0
		}
		if whole == len(data) {
			return nil
		}
		if err := clearDirect(f); err != nil {
			return err
		}
	}
	_, err := f.WriteAt(data[whole:], int64(whole))
	return err
}

// clearDirect turns O_DIRECT off on f.
func clearDirect(f *os.File) error {
	raw, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	err = raw.Control(func(fd uintptr) {
		var fl int
		if fl, ferr = unix.FcntlInt(fd, unix.F_GETFL, 0); ferr == nil {
			_, ferr = unix.FcntlInt(fd, unix.F_SETFL, fl&^unix.O_DIRECT)
		}
	})
	if err != nil {
		return err
	}
	return ferr
}
