// Validation of bucket names and object keys for the HDFS origin: the only
// gate between client-chosen strings and HDFS paths.
package hdfs

import (
	"fmt"
	"net"
	"strings"
	"unicode/utf8"

	"github.com/granary-dev/granary/store"
)

const (
	maxKeyLen     = 1024 // bytes, as S3
	maxSegmentLen = 255  // bytes, HDFS's default dfs.namenode.fs-limits.max-component-length
)

// validBucket reports why name is not a valid S3 bucket name (and so not a
// directory this origin serves), or nil. Every accepted name is a single,
// non-hidden path segment.
func validBucket(name string) error {
	if len(name) < 3 || len(name) > 63 {
		return fmt.Errorf("%w: %q must be 3 to 63 characters", store.ErrInvalidBucketName, name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '-') {
			return fmt.Errorf("%w: %q may hold only a-z, 0-9, '.' and '-'", store.ErrInvalidBucketName, name)
		}
	}
	if !isAlnum(name[0]) || !isAlnum(name[len(name)-1]) {
		return fmt.Errorf("%w: %q must start and end with a letter or digit", store.ErrInvalidBucketName, name)
	}
	if strings.Contains(name, "..") || strings.Contains(name, ".-") || strings.Contains(name, "-.") {
		return fmt.Errorf("%w: %q has adjacent '.'/'-' characters", store.ErrInvalidBucketName, name)
	}
	if net.ParseIP(name) != nil {
		return fmt.Errorf("%w: %q looks like an IP address", store.ErrInvalidBucketName, name)
	}
	if strings.HasPrefix(name, "xn--") || strings.HasPrefix(name, "sthree-") ||
		strings.HasSuffix(name, "-s3alias") || strings.HasSuffix(name, "--ol-s3") {
		return fmt.Errorf("%w: %q uses a reserved prefix or suffix", store.ErrInvalidBucketName, name)
	}
	return nil
}

func isAlnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }

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
