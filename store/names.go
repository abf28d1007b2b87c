// Bucket names and object keys as S3 allows them, checked once for every
// origin that maps them onto something else (directories and paths).
package store

import (
	"fmt"
	"net"
	"strings"
	"unicode/utf8"
)

// MaxKeyLen is the longest object key, in bytes, as S3.
const MaxKeyLen = 1024

// CheckKey reports why key cannot name a path under a bucket, or nil. An
// accepted key is a relative, clean, slash-separated path of at most
// MaxKeyLen bytes of UTF-8 without NUL, whose every segment segment
// accepts (see CheckSegment). A single trailing "/" is allowed: it names a
// folder object.
func CheckKey(key string, segment func(string) error) error {
	switch {
	case key == "":
		return fmt.Errorf("%w: empty key", ErrInvalidKey)
	case len(key) > MaxKeyLen:
		return fmt.Errorf("%w: key longer than %d bytes", ErrInvalidKey, MaxKeyLen)
	case !utf8.ValidString(key):
		return fmt.Errorf("%w: key is not valid UTF-8", ErrInvalidKey)
	case strings.IndexByte(key, 0) >= 0:
		return fmt.Errorf("%w: key contains NUL", ErrInvalidKey)
	}
	body := strings.TrimSuffix(key, "/")
	if body == "" {
		return fmt.Errorf("%w: key %q has no name", ErrInvalidKey, key)
	}
	for seg := range strings.SplitSeq(body, "/") {
		if err := segment(seg); err != nil {
			return fmt.Errorf("%w: key %q: %s", ErrInvalidKey, key, err)
		}
	}
	return nil
}

// CheckSegment reports why seg cannot be one path component of a key: it
// is empty (no leading "/", no "//"), "." or "..", or longer than maxLen
// bytes.
func CheckSegment(seg string, maxLen int) error {
	switch {
	case seg == "":
		return fmt.Errorf("empty path segment")
	case seg == "." || seg == "..":
		return fmt.Errorf("%q segment", seg)
	case len(seg) > maxLen:
		return fmt.Errorf("segment longer than %d bytes", maxLen)
	}
	return nil
}

// CheckBucketName reports why name is not a valid S3 bucket name, or nil.
// Every accepted name is also a single, non-hidden path segment, so an
// origin that maps buckets to directories can use it as one.
func CheckBucketName(name string) error {
	if len(name) < 3 || len(name) > 63 {
		return fmt.Errorf("%w: %q must be 3 to 63 characters", ErrInvalidBucketName, name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '-') {
			return fmt.Errorf("%w: %q may hold only a-z, 0-9, '.' and '-'", ErrInvalidBucketName, name)
		}
	}
	if !isAlnum(name[0]) || !isAlnum(name[len(name)-1]) {
		return fmt.Errorf("%w: %q must start and end with a letter or digit", ErrInvalidBucketName, name)
	}
	if strings.Contains(name, "..") || strings.Contains(name, ".-") || strings.Contains(name, "-.") {
		return fmt.Errorf("%w: %q has adjacent '.'/'-' characters", ErrInvalidBucketName, name)
	}
	if net.ParseIP(name) != nil {
		return fmt.Errorf("%w: %q looks like an IP address", ErrInvalidBucketName, name)
	}
	if strings.HasPrefix(name, "xn--") || strings.HasPrefix(name, "sthree-") ||
		strings.HasSuffix(name, "-s3alias") || strings.HasSuffix(name, "--ol-s3") {
		return fmt.Errorf("%w: %q uses a reserved prefix or suffix", ErrInvalidBucketName, name)
	}
	return nil
}

func isAlnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }
