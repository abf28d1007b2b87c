// Bucket names as S3 allows them, checked once for every origin that maps
// buckets onto something else (directories).
package store

import (
	"fmt"
	"net"
	"strings"
)

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
