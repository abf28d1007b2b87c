//go:build !linux

// Chunk files through the page cache: O_DIRECT is Linux's (see
// direct_linux.go).
package disk

import (
	"os"

	"github.com/granary-dev/granary/store"
)

// directWriter writes chunk files through the page cache.
type directWriter struct{}

// create creates path (it must not exist); direct is always false.
func (*directWriter) create(path string, _ []byte) (*os.File, bool, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, store.PrivateFileMode)
	return f, false, err
}

// write writes data to f from offset 0.
func (*directWriter) write(f *os.File, data []byte, _ bool) error {
	_, err := f.WriteAt(data, 0)
	return err
}
