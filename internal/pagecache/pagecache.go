// Package pagecache drops the kernel's caches (/proc/sys/vm/drop_caches)
// in turn with the code that needs them kept. `go test ./...` runs test
// binaries side by side: a drop in one package (a cold read in the mount
// scenario, the FUSE forget test) failed another's check that a second read
// came from the page cache. Both sides meet at an flock on one file in the
// temporary directory, which every process on the machine shares.
package pagecache

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// lockName is the lock file's name in os.TempDir().
const lockName = "granary-drop-caches.lock"

// waitLimit bounds how long Drop waits for holders of Keep (a variable
// for the package's tests).
var waitLimit = 2 * time.Minute

// What Drop may drop, as drop_caches takes it.
const (
	PageCache = "1" // clean pages of files
	Slab      = "2" // dentries and inodes (and so those inodes' pages)
	All       = "3"
)

// Drop writes what to drop_caches (root only) once no Keep is held, and
// holds off new Keeps while it writes. It waits at most two minutes.
func Drop(what string) error {
	f, err := openLock()
	if err != nil {
		return err
	}
	defer f.Close()
	deadline := time.Now().Add(waitLimit)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return fmt.Errorf("pagecache: lock %s: %w", f.Name(), err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pagecache: the page cache was still kept (%s) after %v", f.Name(), waitLimit)
		}
		time.Sleep(10 * time.Millisecond)
	}
	defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return os.WriteFile("/proc/sys/vm/drop_caches", []byte(what+"\n"), 0o200)
}

// Keep holds off every Drop on the machine until release runs: a check
// that data came from the page cache holds it from the first read to the
// check. A Drop in progress delays Keep by the time one write takes.
func Keep() (release func(), err error) {
	f, err := openLock()
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH); err != nil {
		f.Close()
		return nil, fmt.Errorf("pagecache: lock %s: %w", f.Name(), err)
	}
	return func() { f.Close() }, nil // closing the last descriptor unlocks
}

func openLock() (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(os.TempDir(), lockName), os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return nil, fmt.Errorf("pagecache: %w", err)
	}
	return f, nil
}
