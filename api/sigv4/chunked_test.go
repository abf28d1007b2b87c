// aws-chunked bodies: minio-go's StreamingSignV4 (signed chunks, signed
// trailers) and SignV4Trailer (unsigned chunks with a trailing checksum) as
// oracles, AWS's published streaming example, and tampering, truncation and
// malformed framing of each.
package sigv4

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/granary-dev/granary/api/s3err"
	"github.com/minio/minio-go/v7/pkg/signer"
)

const (
	signedMode          = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
	signedTrailerMode   = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"
	unsignedTrailerMode = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
)

// wireRequest is a signed aws-chunked request and the bytes of its body.
type wireRequest struct {
	r    *Request
	wire []byte
}

// mk returns a fresh Request over wire (or over body if given).
func (w wireRequest) mk(body []byte) *Request {
	r := *w.r
	r.Header = w.r.Header.Clone()
	if body == nil {
		body = w.wire
	}
	r.Body = bytes.NewReader(body)
	r.ContentLength = int64(len(body))
	return &r
}

func drain(t testing.TB, req *http.Request) []byte {
	t.Helper()
	wire, err := io.ReadAll(req.Body)
	if err != nil {
		t.Fatal(err)
	}
	if req.ContentLength > 0 && int64(len(wire)) != req.ContentLength {
		t.Fatalf("signer wrote %d bytes, announced %d", len(wire), req.ContentLength)
	}
	return wire
}

// streaming signs data with signed chunks (and signed trailers if given).
func streaming(t testing.TB, data []byte, trailer http.Header) wireRequest {
	t.Helper()
	req := newHTTPRequest(t, http.MethodPut, "http://"+testHost+"/bucket/big%20object", data)
	req.Header.Set("X-Amz-Meta-Run", "42")
	req.Trailer = trailer
	req = signer.StreamingSignV4(req, testAK, testSK, "", testRegion, int64(len(data)), time.Now().UTC(), newSHA256Hasher())
	return wireRequest{fromHTTP(req), drain(t, req)}
}

// unsignedTrailer signs data the way minio-go and current AWS SDKs send it
// over TLS: unsigned aws-chunked with a trailing checksum.
func unsignedTrailer(t testing.TB, data []byte, trailer http.Header) wireRequest {
	t.Helper()
	req := newHTTPRequest(t, http.MethodPut, "http://"+testHost+"/bucket/obj", data)
	req.Header.Set("X-Amz-Content-Sha256", unsignedTrailerMode)
	req = signer.SignV4Trailer(*req, testAK, testSK, "", testRegion, trailer)
	return wireRequest{fromHTTP(req), drain(t, req)}
}

func trailerOf(name string, data []byte) http.Header {
	return http.Header{name: {digests(data)[http.CanonicalHeaderKey(name)]}}
}

// encodeChunks frames data in chunks of the given sizes for w's request,
// signing each chunk (and the trailer lines) with the reference signer
// chained from w's seed signature when the mode is signed.
func encodeChunks(w wireRequest, data []byte, sizes []int, trailers []string) []byte {
	mode := w.r.Header.Get("X-Amz-Content-Sha256")
	signed := mode != unsignedTrailerMode
	auth, _ := parseAuthorization(w.r.Header.Get("Authorization"))
	cred, _ := parseCredential(auth.Credential)
	key := refKey(testSK, cred.date, cred.region)
	amzDate := w.r.Header.Get("X-Amz-Date")
	prev := auth.Signature
	var b bytes.Buffer
	chunk := func(p []byte) {
		if !signed {
			fmt.Fprintf(&b, "%x\r\n", len(p))
			return
		}
		prev = refChunkSig(key, amzDate, cred.scope, prev, p)
		fmt.Fprintf(&b, "%x;chunk-signature=%s\r\n", len(p), prev)
	}
	for _, n := range sizes {
		chunk(data[:n])
		b.Write(data[:n])
		b.WriteString("\r\n")
		data = data[n:]
	}
	chunk(nil)
	var tr strings.Builder
	for _, l := range trailers {
		b.WriteString(l + "\r\n")
		tr.WriteString(l + "\n")
	}
	if signed && mode == signedTrailerMode {
		b.WriteString(trailerSigName + ":" + refTrailerSig(key, amzDate, cred.scope, prev, tr.String()) + "\r\n")
	}
	b.WriteString("\r\n")
	return b.Bytes()
}

func TestStreamingSigned(t *testing.T) {
	for _, n := range []int{0, 1, 65535, 65536, 65537, 200000} {
		data := payloadOf(n)
		w := streaming(t, data, nil)
		checkReadsAll(t, func() *Request { return w.mk(nil) }, data)
	}
}

func TestStreamingSignedTrailer(t *testing.T) {
	data := payloadOf(150000)
	for _, name := range []string{"x-amz-checksum-crc32", "x-amz-checksum-crc32c", "x-amz-checksum-sha256", "x-amz-checksum-crc64nvme"} {
		w := streaming(t, data, trailerOf(name, data))
		checkReadsAll(t, func() *Request { return w.mk(nil) }, data)
	}
	// The AWS SDK framing of the same request: CRLF line ends, no blank line
	// before the signature.
	tr := trailerOf("x-amz-checksum-sha1", data)
	w := streaming(t, data, tr)
	wire := encodeChunks(w, data, []int{65536, 65536, 150000 - 131072}, []string{"x-amz-checksum-sha1:" + digests(data)["X-Amz-Checksum-Sha1"]})
	checkReadsAll(t, func() *Request { return w.mk(wire) }, data)

	// A wrong checksum under a valid trailer signature.
	bad := encodeChunks(w, data, []int{150000}, []string{"x-amz-checksum-sha1:" + digests(data[1:])["X-Amz-Checksum-Sha1"]})
	checkFailsWithoutFinalByte(t, func() *Request { return w.mk(bad) }, data, s3err.BadDigest)

	// A right checksum under a wrong trailer signature.
	sigAt := bytes.LastIndex(wire, []byte(trailerSigName+":")) + len(trailerSigName) + 1
	forged := bytes.Clone(wire)
	forged[sigAt] ^= 1
	checkFailsWithoutFinalByte(t, func() *Request { return w.mk(forged) }, data, s3err.SignatureDoesNotMatch)

	// No signature at all.
	unsigned := bytes.Replace(wire, wire[sigAt-len(trailerSigName)-1:sigAt+64], nil, 1)
	checkFailsWithoutFinalByte(t, func() *Request { return w.mk(unsigned) }, data, s3err.MalformedTrailerError)
}

func TestUnsignedTrailer(t *testing.T) {
	for _, n := range []int{0, 1, 100, 65536, 300001} {
		data := payloadOf(n)
		for _, name := range []string{"x-amz-checksum-crc32", "x-amz-checksum-crc32c", "x-amz-checksum-sha1", "x-amz-checksum-sha256", "x-amz-checksum-crc64nvme"} {
			w := unsignedTrailer(t, data, trailerOf(name, data))
			checkReadsAll(t, func() *Request { return w.mk(nil) }, data)
		}
	}
}

func TestUnsignedTrailerErrors(t *testing.T) {
	data := payloadOf(100000)
	name := "x-amz-checksum-crc32"
	w := unsignedTrailer(t, data, trailerOf(name, data))
	good := func(extra ...string) []string {
		return append([]string{name + ":" + digests(data)["X-Amz-Checksum-Crc32"]}, extra...)
	}
	tampered := bytes.Clone(data)
	tampered[len(data)-1] ^= 0x80
	tamperedFirst := append([]byte{data[0] ^ 1}, data[1:]...)
	cases := []struct {
		name string
		wire []byte
		sent []byte
		code s3err.Code
	}{
		{"tampered last byte", encodeChunks(w, tampered, []int{65536, 100000 - 65536}, good()), tampered, s3err.BadDigest},
		{"tampered first byte", encodeChunks(w, tamperedFirst, []int{100000}, good()), tamperedFirst, s3err.BadDigest},
		{"wrong checksum", encodeChunks(w, data, []int{100000}, []string{name + ":AAAAAA=="}), data, s3err.BadDigest},
		{"malformed checksum", encodeChunks(w, data, []int{100000}, []string{name + ":%%%"}), data, s3err.MalformedTrailerError},
		{"missing trailer", encodeChunks(w, data, []int{100000}, nil), data, s3err.MalformedTrailerError},
		{"undeclared trailer", encodeChunks(w, data, []int{100000}, good("x-amz-checksum-sha1:AAAA")), data, s3err.MalformedTrailerError},
		{"repeated trailer", encodeChunks(w, data, []int{100000}, good(good()...)), data, s3err.MalformedTrailerError},
		{"not name:value", encodeChunks(w, data, []int{100000}, good("garbage")), data, s3err.MalformedTrailerError},
		{"short", encodeChunks(w, data[:99999], []int{99999}, good()), data, s3err.IncompleteBody},
		{"long", encodeChunks(w, append(bytes.Clone(data), 1), []int{100001}, good()), data, s3err.IncompleteBody},
		{"oversized chunk", []byte("1000001\r\n"), data, s3err.InvalidArgument},
		{"bad size", []byte("zz\r\n"), data, s3err.InvalidArgument},
		{"negative size", []byte("-1\r\n"), data, s3err.InvalidArgument},
		{"no CRLF after data", bytes.Replace(w.wire, []byte("\r\n0\r\n"), []byte("XX0\r\n"), 1), data, s3err.InvalidArgument},
		{"header line too long", []byte("1" + strings.Repeat(" ", 5000) + "\r\n"), data, s3err.InvalidArgument},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sent := c.sent
			if sent == nil {
				sent = data
			}
			checkFailsWithoutFinalByte(t, func() *Request { return w.mk(c.wire) }, sent, c.code)
		})
	}
}

func TestStreamingSignedErrors(t *testing.T) {
	data := payloadOf(140000)
	w := streaming(t, data, nil)
	sigs := chunkSigOffsets(w.wire)
	if len(sigs) != 4 {
		t.Fatalf("want 4 chunk headers, got %d", len(sigs))
	}
	flipAt := func(i int) []byte {
		b := bytes.Clone(w.wire)
		b[i] ^= 1
		return b
	}
	firstData := bytes.Index(w.wire, []byte("\r\n")) + 2
	lastData := sigs[2] + 64 + 2 // first byte of the third (last data) chunk
	cases := []struct {
		name string
		wire []byte
		code s3err.Code
	}{
		{"tampered first chunk", flipAt(firstData + 10), s3err.SignatureDoesNotMatch},
		{"tampered last chunk", flipAt(lastData + 5), s3err.SignatureDoesNotMatch},
		{"tampered last byte", flipAt(sigs[3] - len("\r\n0;chunk-signature=") - 1), s3err.SignatureDoesNotMatch},
		{"bad second signature", flipAt(sigs[1] + 3), s3err.SignatureDoesNotMatch},
		{"bad final signature", flipAt(sigs[3] + 63), s3err.SignatureDoesNotMatch},
		{"non-hex signature", replaceAt(w.wire, sigs[0], strings.Repeat("z", 64)), s3err.SignatureDoesNotMatch},
		{"missing signature", []byte("10000\r\n"), s3err.InvalidArgument},
		{"chunks reordered", reorder(w.wire, sigs), s3err.SignatureDoesNotMatch},
		{"trailer in plain mode", append(bytes.Clone(w.wire), "x-amz-checksum-crc32:AAAAAA==\r\n"...), s3err.MalformedTrailerError},
		{"truncated in data", w.wire[:lastData+100], s3err.IncompleteBody},
		{"truncated before final chunk", w.wire[:sigs[3]-len("0;chunk-signature=")], s3err.IncompleteBody},
		{"truncated in final header", w.wire[:sigs[3]+10], s3err.IncompleteBody},
		{"oversized chunk", []byte("1000001;chunk-signature=" + strings.Repeat("0", 64) + "\r\n"), s3err.InvalidArgument},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkFailsWithoutFinalByte(t, func() *Request { return w.mk(c.wire) }, data, c.code)
		})
	}
}

// replaceAt returns a copy of b with s written at off.
func replaceAt(b []byte, off int, s string) []byte {
	out := bytes.Clone(b)
	copy(out[off:], s)
	return out
}

// chunkSigOffsets returns the offset of each chunk-signature value.
func chunkSigOffsets(wire []byte) []int {
	var out []int
	const tag = ";chunk-signature="
	for off := 0; ; {
		i := bytes.Index(wire[off:], []byte(tag))
		if i < 0 {
			return out
		}
		off += i + len(tag)
		out = append(out, off)
	}
}

// reorder swaps the first two (equal-sized) chunks of wire, each with its
// own header and signature.
func reorder(wire []byte, sigs []int) []byte {
	start := func(i int) int { return bytes.LastIndex(wire[:sigs[i]], []byte("\r\n")) + 2 }
	second, third := start(1), start(2)
	out := append([]byte{}, wire[second:third]...)
	out = append(out, wire[:second]...)
	return append(out, wire[third:]...)
}

// Every truncation of a valid body fails, and never after the final byte.
// (Only the closing CRLFs may go missing: they carry nothing to verify.)
func TestEveryTruncation(t *testing.T) {
	data := payloadOf(300)
	for _, w := range []wireRequest{
		streaming(t, data, nil),
		streaming(t, data, trailerOf("x-amz-checksum-crc32c", data)),
		unsignedTrailer(t, data, trailerOf("x-amz-checksum-crc32", data)),
	} {
		wire := encodeChunks(w, data, []int{100, 150, 50}, trailerLines(w))
		checkReadsAll(t, func() *Request { return w.mk(wire) }, data)
		for cut := 0; cut < len(wire)-4; cut++ {
			r := w.mk(wire[:cut])
			res := mustVerify(t, newVerifier(), r)
			got, err := io.ReadAll(res.Body)
			if err == nil || len(got) >= len(data) {
				t.Fatalf("cut at %d of %d: read %d bytes, err %v", cut, len(wire), len(got), err)
			}
		}
	}
}

// trailerLines returns the trailer lines w's request declares, with the
// right checksum of payloadOf(300).
func trailerLines(w wireRequest) []string {
	var out []string
	for _, name := range w.r.Header.Values("X-Amz-Trailer") {
		out = append(out, name+":"+digests(payloadOf(300))[http.CanonicalHeaderKey(name)])
	}
	return out
}

func TestMissingDecodedLength(t *testing.T) {
	req := newHTTPRequest(t, http.MethodPut, "http://"+testHost+"/b/o", []byte("x"))
	req.Header.Set("X-Amz-Content-Sha256", unsignedTrailerMode)
	r := fromHTTP(signer.SignV4(*req, testAK, testSK, "", testRegion))
	_, err := newVerifier().Verify(r)
	wantCode(t, err, s3err.MissingContentLength)
}

// AWS's published streaming example: 66560 bytes of 'a' in a 65536-byte and
// a 1024-byte chunk, with its documented seed and chunk signatures.
func TestAWSExampleStreaming(t *testing.T) {
	const (
		seed = "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"
		sig1 = "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648"
		sig2 = "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497"
		sig3 = "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9"
	)
	data := bytes.Repeat([]byte("a"), 66560)
	var wire bytes.Buffer
	wire.WriteString("10000;chunk-signature=" + sig1 + "\r\n")
	wire.Write(data[:65536])
	wire.WriteString("\r\n400;chunk-signature=" + sig2 + "\r\n")
	wire.Write(data[65536:])
	wire.WriteString("\r\n0;chunk-signature=" + sig3 + "\r\n\r\n")
	if wire.Len() != 66824 {
		t.Fatalf("encoded length %d", wire.Len())
	}
	mk := func() *Request {
		return &Request{
			Method: http.MethodPut, RawPath: "/examplebucket/chunkObject.txt", Host: "s3.amazonaws.com",
			Header: headerOf(http.Header{
				"Authorization": {"AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request," +
					"SignedHeaders=content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;x-amz-storage-class," +
					"Signature=" + seed},
				"Content-Encoding":             {"aws-chunked"},
				"Content-Length":               {"66824"},
				"X-Amz-Content-Sha256":         {signedMode},
				"X-Amz-Date":                   {"20130524T000000Z"},
				"X-Amz-Decoded-Content-Length": {"66560"},
				"X-Amz-Storage-Class":          {"REDUCED_REDUNDANCY"},
			}),
			Body: bytes.NewReader(wire.Bytes()), ContentLength: 66824,
		}
	}
	v := fixedVerifier(time.Date(2013, 5, 24, 0, 0, 30, 0, time.UTC))
	res := mustVerify(t, v, mk())
	got, err := readBody(res)
	if err != nil || !bytes.Equal(got, data) || res.ContentLength != 66560 {
		t.Fatalf("read %d bytes, %v, length %d", len(got), err, res.ContentLength)
	}
	// A framework that keeps Content-Length out of the header map: the
	// signed value comes from Request.ContentLength.
	r := mk()
	r.Header.Del("Content-Length")
	mustVerify(t, v, r)
	r.ContentLength = 66825
	_, err = v.Verify(r)
	wantCode(t, err, s3err.SignatureDoesNotMatch)
}

func TestUnsupportedTrailer(t *testing.T) {
	data := []byte("hello")
	w := unsignedTrailer(t, data, http.Header{"x-amz-checksum-md5": {"XUFAKrxLKna5cZ2REBfFkg=="}})
	_, err := newVerifier().Verify(w.mk(nil))
	wantCode(t, err, s3err.InvalidArgument)
}

func TestVerifierWithoutCredentials(t *testing.T) {
	_, err := (&Verifier{}).Verify(&Request{Method: "GET", RawPath: "/"})
	wantCode(t, err, s3err.InternalError)
}
