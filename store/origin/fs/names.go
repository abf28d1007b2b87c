// Validation of bucket names and object keys for the directory origin: the
// only gate between client-chosen strings and paths on the local disk.
package fs

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/granary-dev/granary/store"
)

const (
	maxKeyLen     = 1024 // bytes, as S3
	maxSegmentLen = 255  // bytes, NAME_MAX of common Linux filesystems
)

// validKey reports why key cannot name a file under a bucket, or nil.
// An accepted key is a relative, clean, slash-separated path: no empty
// segment (so no leading "/" and no "//"), no "." or ".." segment, no NUL.
// A single trailing "/" is allowed: it names a folder object.
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
		switch {
		case seg == "":
			return fmt.Errorf("%w: key %q has an empty path segment", store.ErrInvalidKey, key)
		case seg == "." || seg == "..":
			return fmt.Errorf("%w: key %q has a %q segment", store.ErrInvalidKey, key, seg)
		case len(seg) > maxSegmentLen:
			return fmt.Errorf("%w: key %q has a segment longer than %d bytes", store.ErrInvalidKey, key, maxSegmentLen)
		}
	}
	return nil
}

// listableKey reports whether a path found while walking a bucket can be
// presented as a key (files with names no client could ask for are skipped).
func listableKey(key string) bool {
	return len(key) <= maxKeyLen && utf8.ValidString(key)
}

// isFolderKey reports whether key names a folder object ("dir/").
func isFolderKey(key string) bool { return strings.HasSuffix(key, "/") }
