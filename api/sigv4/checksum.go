// Payload checksums: the x-amz-checksum-* algorithms S3 clients send as a
// header or a trailer, and Content-MD5.
package sigv4

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"hash"
	"hash/crc32"
	"strings"

	"github.com/minio/crc64nvme"
)

const checksumPrefix = "x-amz-checksum-"

// checksumAlg is one x-amz-checksum-<name> algorithm.
type checksumAlg struct {
	name string // lower-case header name
	size int    // digest size in bytes
	new  func() hash.Hash
}

var (
	castagnoli   = crc32.MakeTable(crc32.Castagnoli)
	strictBase64 = base64.StdEncoding.Strict()
)

// checksumAlgs are the algorithms Granary verifies. CRC64NVME is
// CRC-64 with the NVMe polynomial, reflected, as S3 defines it.
var checksumAlgs = [...]checksumAlg{
	{"x-amz-checksum-crc32", 4, func() hash.Hash { return crc32.NewIEEE() }},
	{"x-amz-checksum-crc32c", 4, func() hash.Hash { return crc32.New(castagnoli) }},
	{"x-amz-checksum-crc64nvme", 8, func() hash.Hash { return crc64nvme.New() }},
	{"x-amz-checksum-sha1", 20, sha1.New},
	{"x-amz-checksum-sha256", 32, sha256.New},
}

// lookupChecksum returns the algorithm of a header name, any case.
func lookupChecksum(name string) (*checksumAlg, bool) {
	for i := range checksumAlgs {
		if strings.EqualFold(checksumAlgs[i].name, name) {
			return &checksumAlgs[i], true
		}
	}
	return nil, false
}

// decodeDigest decodes a base64 digest of the given size.
func decodeDigest(v string, size int) ([]byte, bool) {
	v = strings.TrimSpace(v)
	if base64.StdEncoding.DecodedLen(len(v)) < size || len(v) > base64.StdEncoding.EncodedLen(size) {
		return nil, false
	}
	out := make([]byte, base64.StdEncoding.DecodedLen(len(v)))
	n, err := strictBase64.Decode(out, []byte(v))
	if err != nil || n != size {
		return nil, false
	}
	return out[:n], true
}

// newMD5 is md5.New as a func value for a check.
func newMD5() hash.Hash { return md5.New() }
