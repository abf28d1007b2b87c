// Single-part payloads: the x-amz-content-sha256 hash, UNSIGNED-PAYLOAD,
// Content-MD5 and x-amz-checksum-* headers, the declared length, and the
// invariant that a failing body never yields its final byte.
package sigv4

import (
	"bytes"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"
	"hash/crc64"
	"io"
	"net/http"
	"testing"
	"testing/iotest"

	"github.com/granary-dev/granary/api/s3err"
	"github.com/minio/crc64nvme"
	"github.com/minio/minio-go/v7/pkg/signer"
)

// signedPut signs a PUT of body with the given payload hash and headers.
func signedPut(t testing.TB, url string, body []byte, payload string, hdr map[string]string) *Request {
	t.Helper()
	req := newHTTPRequest(t, http.MethodPut, url, body)
	req.Header.Set("X-Amz-Content-Sha256", payload)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	r := fromHTTP(signer.SignV4(*req, testAK, testSK, "", testRegion))
	r.Body = bytes.NewReader(body)
	r.ContentLength = int64(len(body))
	return r
}

// readers wraps a body in the shapes a network body comes in.
var readers = map[string]func(io.Reader) io.Reader{
	"plain":    func(r io.Reader) io.Reader { return r },
	"one-byte": iotest.OneByteReader,
	"half":     iotest.HalfReader,
	"data-err": iotest.DataErrReader,
}

// shape is one way of reading a body: a source wrapper and a read size.
type shape struct {
	name string
	n    int
}

// shapes combines every wrapper with every read size, except that bodies
// over 16 KiB skip byte-at-a-time reading (slow under -race, and the small
// bodies already cover it).
func shapes(size int, sizes ...int) []shape {
	var out []shape
	for name := range readers {
		for _, n := range sizes {
			if size > 16<<10 && (n < 7 || name == "one-byte") {
				continue
			}
			out = append(out, shape{name, n})
		}
	}
	return out
}

// readWith reads body to its end or first error with reads of size n.
func readWith(body io.Reader, n int) ([]byte, error) {
	var out []byte
	buf := make([]byte, n)
	for {
		m, err := body.Read(buf)
		out = append(out, buf[:m]...)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}

// checkFailsWithoutFinalByte verifies r, reads its body in several ways and
// requires the error code and that what was read is a strict prefix of
// sent: the final byte never reached the consumer.
func checkFailsWithoutFinalByte(t *testing.T, mk func() *Request, sent []byte, code s3err.Code) {
	t.Helper()
	for _, sh := range shapes(len(sent), 1, 2, 7, 4096, 1<<20) {
		r := mk()
		r.Body = readers[sh.name](r.Body)
		res, err := newVerifier().Verify(r)
		if err != nil {
			wantCode(t, err, code)
			continue
		}
		got, err := readWith(res.Body, sh.n)
		wantCode(t, err, code)
		if len(got) >= len(sent) || !bytes.Equal(got, sent[:len(got)]) {
			t.Fatalf("%s/%d: read %d of %d bytes before %v", sh.name, sh.n, len(got), len(sent), err)
		}
		if _, err2 := res.Body.Read(make([]byte, 8)); err2 == nil || err2.Error() != err.Error() {
			t.Fatalf("error not sticky: %v then %v", err, err2)
		}
	}
}

// checkReadsAll verifies r and requires its body to read back as want in
// every read shape.
func checkReadsAll(t *testing.T, mk func() *Request, want []byte) {
	t.Helper()
	for _, sh := range shapes(len(want), 1, 3, 4096, 1<<20) {
		r := mk()
		r.Body = readers[sh.name](r.Body)
		res := mustVerify(t, newVerifier(), r)
		got, err := readWith(res.Body, sh.n)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s/%d: read %d of %d bytes, %v", sh.name, sh.n, len(got), len(want), err)
		}
		if res.ContentLength != int64(len(want)) {
			t.Fatalf("ContentLength %d, want %d", res.ContentLength, len(want))
		}
	}
}

func TestHashedPayload(t *testing.T) {
	body := payloadOf(70000)
	url := "http://" + testHost + "/bucket/obj"
	good := func() *Request { return signedPut(t, url, body, sha256Hex(body), nil) }
	checkReadsAll(t, good, body)

	for _, at := range []int{0, len(body) / 2, len(body) - 1} {
		bad := bytes.Clone(body)
		bad[at] ^= 1
		checkFailsWithoutFinalByte(t, func() *Request {
			r := good()
			r.Body = bytes.NewReader(bad)
			return r
		}, bad, s3err.XAmzContentSHA256Mismatch)
	}
	// Unknown length (HTTP chunked transfer): still verified.
	checkFailsWithoutFinalByte(t, func() *Request {
		r := good()
		r.ContentLength = -1
		r.Body = bytes.NewReader(append(bytes.Clone(body[:len(body)-1]), 0))
		return r
	}, body, s3err.XAmzContentSHA256Mismatch)
}

func TestMalformedPayloadHash(t *testing.T) {
	r := signedPut(t, "http://"+testHost+"/b/o", []byte("x"), "abc", nil)
	_, err := newVerifier().Verify(r)
	wantCode(t, err, s3err.InvalidArgument)
}

func TestIncompleteBody(t *testing.T) {
	body := payloadOf(5000)
	for _, payload := range []string{unsignedPayload, sha256Hex(body)} {
		checkFailsWithoutFinalByte(t, func() *Request {
			r := signedPut(t, "http://"+testHost+"/b/o", body, payload, nil)
			r.Body = bytes.NewReader(body[:4000])
			return r
		}, body, s3err.IncompleteBody)
	}
}

// Bytes past Content-Length belong to the next request on the connection.
func TestBodyLongerThanContentLength(t *testing.T) {
	body := payloadOf(100)
	r := signedPut(t, "http://"+testHost+"/b/o", body, unsignedPayload, nil)
	r.Body = bytes.NewReader(append(bytes.Clone(body), "GET / HTTP/1.1\r\n"...))
	res := mustVerify(t, newVerifier(), r)
	got, err := readBody(res)
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("read %d bytes, %v", len(got), err)
	}
}

func TestUnsignedPayload(t *testing.T) {
	body := payloadOf(1 << 16)
	checkReadsAll(t, func() *Request {
		return signedPut(t, "http://"+testHost+"/b/o", body, unsignedPayload, nil)
	}, body)
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// digests returns the x-amz-checksum-* and Content-MD5 values of b.
func digests(b []byte) map[string]string {
	crc := func(tab *crc32.Table) string {
		return b64(binary.BigEndian.AppendUint32(nil, crc32.Checksum(b, tab)))
	}
	s1, s256, m5 := sha1.Sum(b), sha256.Sum256(b), md5.Sum(b)
	return map[string]string{
		"X-Amz-Checksum-Crc32":     crc(crc32.IEEETable),
		"X-Amz-Checksum-Crc32c":    crc(crc32.MakeTable(crc32.Castagnoli)),
		"X-Amz-Checksum-Crc64nvme": b64(binary.BigEndian.AppendUint64(nil, crc64nvme.Checksum(b))),
		"X-Amz-Checksum-Sha1":      b64(s1[:]),
		"X-Amz-Checksum-Sha256":    b64(s256[:]),
		"Content-Md5":              b64(m5[:]),
	}
}

func TestChecksumHeaders(t *testing.T) {
	body := payloadOf(30000)
	other := payloadOf(30001)[1:]
	for name, value := range digests(body) {
		t.Run(name, func(t *testing.T) {
			for _, payload := range []string{unsignedPayload, sha256Hex(body)} {
				mk := func() *Request {
					return signedPut(t, "http://"+testHost+"/b/o", body, payload, map[string]string{name: value})
				}
				checkReadsAll(t, mk, body)
			}
			wrong := map[string]string{name: digests(other)[name]}
			checkFailsWithoutFinalByte(t, func() *Request {
				return signedPut(t, "http://"+testHost+"/b/o", body, unsignedPayload, wrong)
			}, body, s3err.BadDigest)
			malformed := map[string]string{name: "!!notbase64"}
			_, err := newVerifier().Verify(signedPut(t, "http://"+testHost+"/b/o", body, unsignedPayload, malformed))
			if name == "Content-Md5" {
				wantCode(t, err, s3err.InvalidDigest)
			} else {
				wantCode(t, err, s3err.InvalidArgument)
			}
		})
	}
}

func TestEmptyBodyChecks(t *testing.T) {
	url := "http://" + testHost + "/b/o"
	mustVerify(t, newVerifier(), signedPut(t, url, nil, emptySHA256, digests(nil)))
	_, err := newVerifier().Verify(signedPut(t, url, nil, sha256Hex([]byte("x")), nil))
	wantCode(t, err, s3err.XAmzContentSHA256Mismatch)
	_, err = newVerifier().Verify(signedPut(t, url, nil, unsignedPayload,
		map[string]string{"Content-Md5": digests([]byte("x"))["Content-Md5"]}))
	wantCode(t, err, s3err.BadDigest)
}

// CompleteMultipartUpload's checksum headers describe the object, not the
// XML body; they are not verified here.
func TestCompleteMultipartChecksumNotBodyChecksum(t *testing.T) {
	body := []byte("<CompleteMultipartUpload></CompleteMultipartUpload>")
	req := newHTTPRequest(t, http.MethodPost, "http://"+testHost+"/b/o?uploadId=abc", body)
	req.Header.Set("X-Amz-Content-Sha256", sha256Hex(body))
	req.Header.Set("X-Amz-Checksum-Crc32", "AAAAAA==-3")
	r := fromHTTP(signer.SignV4(*req, testAK, testSK, "", testRegion))
	r.Body, r.ContentLength = bytes.NewReader(body), int64(len(body))
	res := mustVerify(t, newVerifier(), r)
	if got, err := readBody(res); err != nil || !bytes.Equal(got, body) {
		t.Fatalf("read %q, %v", got, err)
	}
}

// CRC-64/NVME: the catalogued check value, and agreement with the standard
// library's table-driven CRC-64 using the reflected NVMe polynomial.
func TestCRC64NVME(t *testing.T) {
	if got := crc64nvme.Checksum([]byte("123456789")); got != 0xAE8B14860A799888 {
		t.Fatalf("check value %#x", got)
	}
	tab := crc64.MakeTable(0x9a6c9329ac4bc9b5)
	for _, n := range []int{0, 1, 15, 16, 17, 255, 4096, 100003} {
		b := payloadOf(n)
		if crc64.Checksum(b, tab) != crc64nvme.Checksum(b) {
			t.Fatalf("n=%d: mismatch", n)
		}
	}
}
