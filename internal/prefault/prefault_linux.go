//go:build linux

// Populate on Linux: madvise(MADV_POPULATE_WRITE) over the buffer's whole
// pages (kernel 5.14 or later; an older kernel refuses it and the pages
// fault in as they are written, as without it).
package prefault

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// pageSize is the unit madvise works in.
var pageSize = uintptr(unix.Getpagesize())

// Populate maps b's pages for writing if b is at least Min bytes; its
// bytes are unchanged. It reports whether the kernel did.
func Populate(b []byte) bool {
	if len(b) < Min {
		return false
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	head := int((pageSize - p%pageSize) % pageSize) // bytes before the first whole page
	tail := int((p + uintptr(len(b))) % pageSize)   // bytes after the last
	if head+tail >= len(b) {
		return false
	}
	return unix.Madvise(b[head:len(b)-tail], unix.MADV_POPULATE_WRITE) == nil
}
