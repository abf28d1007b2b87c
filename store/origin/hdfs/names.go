// Validation of bucket names and object keys for the HDFS origin: the only
// gate between client-chosen strings and HDFS paths.
package hdfs

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/granary-dev/granary/store"
)

const (
	maxKeyLen     = 1024 // bytes, as S3
	maxSegmentLen = 255  // bytes, HDFS's default dfs.namenode.fs-limits.max-component-length
)

// validKey reports why key cannot name a path under a bucket, or nil. An
// accepted key is a relative, clean, slash-separated path: no empty
// segment (no leading "/", no "//"), no "." or ".." segment, no NUL, no
// reserved segment. A single trailing "/" is allowed: it names a folder
// object. Names the namenode itself refuses (real HDFS refuses ':') fail
// there, as InvalidPathException, translated to store.ErrInvalidKey.
func validKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("%w: empty key", store.ErrInvalidKey)
	case len(key) > maxKeyLen:
		return fmt.Errorf("%w: key longer than %d bytes", store.ErrInvalidKey, maxKeyLen)
	case !utf8.ValidString(key):
		return fmt.Errorf("%w: key is not valid UTF-8", store.ErrInvalidKey)
	case strings.IndexByte(key, 0) >= 0:
		return fmt.Errorf("%w: key contains NUL", store.ErrInvalidKey)
	}
	body := strings.TrimSuffix(key, "/")
	if body == "" {
		return fmt.Errorf("%w: key %q has no name", store.ErrInvalidKey, key)
	}
	for seg := range strings.SplitSeq(body, "/") {
		if err := validSegment(seg); err != nil {
			return fmt.Errorf("%w: key %q: %s", store.ErrInvalidKey, key, err)
		}
	}
	return nil
}

// validSegment reports why seg cannot be one HDFS path component of a key.
func validSegment(seg string) error {
	switch {
	case seg == "":
		return fmt.Errorf("empty path segment")
	case seg == "." || seg == "..":
		return fmt.Errorf("%q segment", seg)
	case len(seg) > maxSegmentLen:
		return fmt.Errorf("segment longer than %d bytes", maxSegmentLen)
	case strings.HasPrefix(seg, reservedPrefix):
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
