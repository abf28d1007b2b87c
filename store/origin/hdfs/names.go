// Validation of object keys for the HDFS origin: the only gate between
// client-chosen strings and HDFS paths.
package hdfs

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/granary-dev/granary/store"
)

// maxSegmentLen is HDFS's default dfs.namenode.fs-limits.max-component-length, in bytes.
const maxSegmentLen = 255

// validKey reports why key cannot name a path under a bucket, or nil (see
// store.CheckKey; segments with the reserved prefix are refused too).
// Names the namenode itself refuses (real HDFS refuses ':') fail there, as
// InvalidPathException, translated to store.ErrInvalidKey.
func validKey(key string) error { return store.CheckKey(key, validSegment) }

// validSegment reports why seg cannot be one HDFS path component of a key.
func validSegment(seg string) error {
	if err := store.CheckSegment(seg, maxSegmentLen); err != nil {
		return err
	}
	if strings.HasPrefix(seg, reservedPrefix) {
		return fmt.Errorf("segment %q uses the reserved prefix %q", seg, reservedPrefix)
	}
	return nil
}

// listableName reports whether a name found in a directory can be part of
// a key (reserved and unreadable names are skipped by listings).
func listableName(name string) bool {
	return validSegment(name) == nil && utf8.ValidString(name)
}

// isFolderKey reports whether key names a folder object ("dir/").
func isFolderKey(key string) bool { return strings.HasSuffix(key, "/") }
