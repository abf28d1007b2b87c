// Request targets: the bucket and key a request addresses, from its raw
// (still percent-encoded) path and its Host (virtual-host style), and the
// S3 rules for bucket names and keys, checked before anything reaches the
// engine.
package api

import (
	"strings"
	"unicode/utf8"

	"github.com/granary-dev/granary/api/s3err"
)

// maxKeyLen is S3's limit on a key's UTF-8 length.
const maxKeyLen = 1024

// unhex returns the value of a hex digit and whether c is one.
func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// decodePath percent-decodes a raw path. Unlike a query string, '+' is a
// plus sign. A malformed escape is an error, never guessed at.
func decodePath(raw []byte) (string, error) {
	n := 0
	for i := 0; i < len(raw); i++ {
		if raw[i] == '%' {
			n++
		}
	}
	if n == 0 {
		return string(raw), nil
	}
	out := make([]byte, 0, len(raw)-2*n)
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '%' {
			out = append(out, c)
			continue
		}
		if i+2 >= len(raw) {
			return "", s3err.New(s3err.InvalidURI, "malformed percent-encoding in the path")
		}
		hi, ok1 := unhex(raw[i+1])
		lo, ok2 := unhex(raw[i+2])
		if !ok1 || !ok2 {
			return "", s3err.New(s3err.InvalidURI, "malformed percent-encoding in the path")
		}
		out = append(out, hi<<4|lo)
		i += 2
	}
	return string(out), nil
}

// hostBucket returns the bucket a virtual-host style Host names, if host is
// "BUCKET.DOMAIN[:port]" for one of suffixes ("." + domain).
func hostBucket(host string, suffixes []string) (string, bool) {
	if len(suffixes) == 0 || host == "" || host[0] == '[' {
		return "", false
	}
	if i := strings.LastIndexByte(host, ':'); i >= 0 {
		host = host[:i]
	}
	for _, suf := range suffixes {
		if len(host) > len(suf) && strings.EqualFold(host[len(host)-len(suf):], suf) {
			return strings.ToLower(host[:len(host)-len(suf)]), true
		}
	}
	return "", false
}

// splitTarget returns the bucket and key a request addresses. An empty
// bucket is the service; an empty key is the bucket.
func splitTarget(host string, rawPath []byte, suffixes []string) (bucket, key string, err error) {
	if len(rawPath) == 0 || rawPath[0] != '/' {
		return "", "", s3err.New(s3err.InvalidURI, "the path must start with '/'")
	}
	path, err := decodePath(rawPath)
	if err != nil {
		return "", "", err
	}
	if b, ok := hostBucket(host, suffixes); ok {
		return b, path[1:], nil
	}
	rest := path[1:]
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		return rest[:i], rest[i+1:], nil
	}
	return rest, "", nil
}

// validBucketName reports whether name follows S3's bucket naming rules.
func validBucketName(name string) bool {
	if len(name) < 3 || len(name) > 63 {
		return false
	}
	if !isLowerAlnum(name[0]) || !isLowerAlnum(name[len(name)-1]) {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !isLowerAlnum(c) && c != '-' && c != '.' {
			return false
		}
		if c == '.' && (name[i-1] == '.' || name[i-1] == '-' || name[i+1] == '-') {
			return false // "..", "-.", ".-" (i is never 0 or last here)
		}
	}
	if looksLikeIPv4(name) {
		return false
	}
	for _, p := range reservedBucketPrefixes {
		if strings.HasPrefix(name, p) {
			return false
		}
	}
	for _, suf := range reservedBucketSuffixes {
		if strings.HasSuffix(name, suf) {
			return false
		}
	}
	return true
}

var (
	reservedBucketPrefixes = []string{"xn--", "sthree-"}
	reservedBucketSuffixes = []string{"-s3alias", "--ol-s3"}
)

func isLowerAlnum(c byte) bool { return ('a' <= c && c <= 'z') || ('0' <= c && c <= '9') }

// looksLikeIPv4 reports whether name is four dot-separated decimal numbers.
func looksLikeIPv4(name string) bool {
	parts := 0
	digits := 0
	for i := 0; i <= len(name); i++ {
		if i == len(name) || name[i] == '.' {
			if digits == 0 || digits > 3 {
				return false
			}
			parts++
			digits = 0
			continue
		}
		if name[i] < '0' || name[i] > '9' {
			return false
		}
		digits++
	}
	return parts == 4
}

// checkBucket returns InvalidBucketName unless name is a valid bucket name.
func checkBucket(name string) error {
	if !validBucketName(name) {
		return s3err.New(s3err.InvalidBucketName, "The specified bucket is not valid: "+quoteShort(name))
	}
	return nil
}

// checkKey returns the S3 error for a key that must never reach an origin:
// too long, not UTF-8, holding NUL, or with a "." or ".." path segment
// (which a directory origin would resolve outside the bucket).
func checkKey(key string) error {
	if len(key) > maxKeyLen {
		return s3err.New(s3err.KeyTooLongError, "")
	}
	if key == "" {
		return s3err.New(s3err.InvalidArgument, "the object key is empty")
	}
	if !utf8.ValidString(key) {
		return s3err.New(s3err.InvalidArgument, "the object key is not valid UTF-8")
	}
	if strings.IndexByte(key, 0) >= 0 {
		return s3err.New(s3err.InvalidArgument, "the object key contains a NUL byte")
	}
	for start := 0; start <= len(key); {
		end := strings.IndexByte(key[start:], '/')
		if end < 0 {
			end = len(key)
		} else {
			end += start
		}
		if seg := key[start:end]; seg == "." || seg == ".." {
			return s3err.New(s3err.InvalidArgument, "the object key has a '.' or '..' path segment")
		}
		start = end + 1
	}
	return nil
}

// quoteShort quotes s for an error message, cut to a readable length.
func quoteShort(s string) string {
	const max = 80
	if len(s) > max {
		s = s[:max] + "..."
	}
	return "\"" + strings.ToValidUTF8(s, "?") + "\""
}
