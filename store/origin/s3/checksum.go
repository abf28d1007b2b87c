// Upload bodies checked by a trailing CRC32C (Options.PayloadCRC32C)
// instead of signed with SHA-256. Over plain HTTP minio-go signs a body
// 64 KiB at a time (STREAMING-AWS4-HMAC-SHA256-PAYLOAD), which costs
// the node about a second of CPU per GiB uploaded; sent unsigned in the
// same aws-chunked framing with its CRC32C in a trailer
// (STREAMING-UNSIGNED-PAYLOAD-TRAILER), the origin still refuses a body
// changed on the way, at about a third of the CPU. The request itself
// (headers, trailer's name, length) stays signed.
package s3

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"maps"
	"net/http"

	"github.com/minio/minio-go/v7"
)

// crc32cTrailer is the trailer that carries a body's CRC32C.
const crc32cTrailer = "X-Amz-Checksum-Crc32c"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// partBody returns what to send for an upload part read from body, and
// its options: body itself, signed as minio-go signs it, or body with
// its CRC32C in a trailer.
func (o *Origin) partBody(body io.Reader) (io.Reader, minio.PutObjectPartOptions) {
	if !o.opts.PayloadCRC32C {
		return body, minio.PutObjectPartOptions{}
	}
	trailer := make(http.Header, 1)
	// minio-go sizes the aws-chunked body when it signs the request,
	// before the body is read, from the trailer as it is then: the
	// placeholder is as long as the CRC that replaces it (4 bytes).
	trailer.Set(crc32cTrailer, base64.StdEncoding.EncodeToString(make([]byte, crc32.Size)))
	c := &crcBody{r: body, h: crc32.New(castagnoli), trailer: trailer}
	return c.rewindable(), minio.PutObjectPartOptions{DisableContentSha256: true, Trailer: trailer}
}

// putOptionsFor adds to opts, for a single PUT, the trailing CRC32C
// that minio-go computes itself when asked (Checksum), unless the CRC
// is in a header already (checksumHeader).
func (o *Origin) putOptionsFor(opts minio.PutObjectOptions) minio.PutObjectOptions {
	if o.opts.PayloadCRC32C {
		opts.DisableContentSha256 = true
		if _, ok := opts.UserMetadata[crc32cTrailer]; !ok {
			opts.Checksum = minio.ChecksumCRC32C
		}
	}
	return opts
}

// checksumHeader puts the CRC32C of body, held in memory, in a header of
// its single PUT. minio-go may send such a body again (its retries), and
// hashes a trailer's body as it streams, without starting over: a header
// is right for every try.
func (o *Origin) checksumHeader(opts minio.PutObjectOptions, body []byte) minio.PutObjectOptions {
	if !o.opts.PayloadCRC32C {
		return opts
	}
	meta := make(map[string]string, len(opts.UserMetadata)+1)
	maps.Copy(meta, opts.UserMetadata)
	meta[crc32cTrailer] = base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint32(nil, crc32.Checksum(body, castagnoli)))
	opts.UserMetadata = meta
	return opts
}

// crcBody reads r, and once r ends (io.EOF) sets trailer to the CRC32C
// of every byte read since the start. minio-go writes the trailer after
// it has read the body to its end.
type crcBody struct {
	r       io.Reader
	h       hash.Hash32
	trailer http.Header
}

func (c *crcBody) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.h.Write(p[:n])
	if err == io.EOF {
		c.trailer.Set(crc32cTrailer, base64.StdEncoding.EncodeToString(c.h.Sum(nil)))
	}
	return n, err
}

// errNoRewind is a seek other than back to a body's start.
var errNoRewind = errors.New("s3: a checksummed body only rewinds to its start")

// crcSeeker is a crcBody over a seekable body, so minio-go may rewind
// it to send it again (its retries): the CRC starts over with the body.
type crcSeeker struct {
	*crcBody
	s io.Seeker
}

func (c crcSeeker) Seek(off int64, whence int) (int64, error) {
	if off != 0 || whence != io.SeekStart {
		return 0, errNoRewind
	}
	c.h.Reset()
	return c.s.Seek(0, io.SeekStart)
}

// rewindable returns c as a seeker when its body is one.
func (c *crcBody) rewindable() io.Reader {
	if s, ok := c.r.(io.Seeker); ok {
		return crcSeeker{c, s}
	}
	return c
}

// refusedCodes are what an origin that does not take trailing checksums
// answers an upload that carries one.
var refusedCodes = map[string]bool{
	"NotImplemented": true, "InvalidRequest": true, "InvalidArgument": true,
	"XAmzContentSHA256Mismatch": true, "MissingContentLength": true,
}

// payloadHint adds to wrapped, the error of an upload that failed with
// err, what to change when the origin may have refused the trailing
// checksum itself: an operator reading the log finds the setting.
func (o *Origin) payloadHint(wrapped, err error) error {
	var er minio.ErrorResponse
	if !o.opts.PayloadCRC32C || !errors.As(err, &er) || !refusedCodes[er.Code] {
		return wrapped
	}
	return fmt.Errorf("%w; uploads go with payload=crc32c (a trailing CRC32C), which this origin may not accept: try payload=signed in the origin URL", wrapped)
}
