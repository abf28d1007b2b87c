// Validation of object keys for the directory origin: the only gate
// between client-chosen strings and paths on the local disk.
package fs

import (
	"strings"
	"unicode/utf8"

	"github.com/granary-dev/granary/store"
)

// maxSegmentLen is NAME_MAX of common Linux filesystems, in bytes.
const maxSegmentLen = 255

// validKey reports why key cannot name a file under a bucket, or nil (see
// store.CheckKey).
func validKey(key string) error {
	return store.CheckKey(key, func(seg string) error { return store.CheckSegment(seg, maxSegmentLen) })
}

// listableKey reports whether a path found while walking a bucket can be
// presented as a key (files with names no client could ask for are skipped).
func listableKey(key string) bool {
	return len(key) <= store.MaxKeyLen && utf8.ValidString(key)
}

// isFolderKey reports whether key names a folder object ("dir/").
func isFolderKey(key string) bool { return strings.HasSuffix(key, "/") }
