// Payload modes: what x-amz-content-sha256 announces (a hex SHA-256,
// UNSIGNED-PAYLOAD or one of the aws-chunked STREAMING-* modes) and the
// checks the body is wrapped in (hash, header and trailer checksums,
// Content-MD5, length).
package sigv4

import (
	"crypto/sha256"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/granary-dev/granary/api/s3err"
)

// payloadMode is how the payload is sent and signed.
type payloadMode int

const (
	modeHash                  payloadMode = iota // hex SHA-256 of the body
	modeUnsigned                                 // UNSIGNED-PAYLOAD
	modeSignedChunks                             // STREAMING-AWS4-HMAC-SHA256-PAYLOAD
	modeSignedChunksTrailer                      // STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER
	modeUnsignedChunksTrailer                    // STREAMING-UNSIGNED-PAYLOAD-TRAILER
)

func (m payloadMode) chunked() bool { return m >= modeSignedChunks }
func (m payloadMode) trailer() bool {
	return m == modeSignedChunksTrailer || m == modeUnsignedChunksTrailer
}

// parseMode reads the hashed-payload value.
func parseMode(p string) (payloadMode, [32]byte, error) {
	var sum [32]byte
	switch p {
	case unsignedPayload:
		return modeUnsigned, sum, nil
	case "STREAMING-AWS4-HMAC-SHA256-PAYLOAD":
		return modeSignedChunks, sum, nil
	case "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER":
		return modeSignedChunksTrailer, sum, nil
	case "STREAMING-UNSIGNED-PAYLOAD-TRAILER":
		return modeUnsignedChunksTrailer, sum, nil
	case emptySHA256: // every signed GET
		return modeHash, emptySum, nil
	}
	if !decodeHex(sum[:], p) {
		return 0, sum, s3err.New(s3err.InvalidArgument, "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, a STREAMING-* value or a hex SHA-256.")
	}
	return modeHash, sum, nil
}

// emptySum is the SHA-256 of nothing.
var emptySum = sha256.Sum256(nil)

// payload wraps r's body in the checks its payload mode and headers ask for
// and returns it with its decoded length.
func (v *Verifier) payload(r *Request, a *authInfo, sc *scratch) (io.Reader, int64, error) {
	mode, sum, err := parseMode(a.payload)
	if err != nil {
		return nil, 0, err
	}
	checks, err := headerChecks(r, sc)
	if err != nil {
		return nil, 0, err
	}
	if r.ContentLength == 0 && !mode.chunked() {
		return emptyBody(mode, &sum, checks)
	}
	if (r.Body == nil || r.Body == http.NoBody) && !mode.chunked() {
		// No body and no declared length (a GET): nothing to wrap. A
		// check the empty payload fails is met by whoever reads it, as
		// at the end of a wrapped body.
		body, _, err := emptyBody(mode, &sum, checks)
		if err != nil {
			body = failedBody{err}
		}
		return body, r.ContentLength, nil
	}
	raw := r.Body
	if raw == nil {
		raw = http.NoBody
	}
	if r.ContentLength >= 0 {
		// Bytes past Content-Length are not part of this request.
		raw = io.LimitReader(raw, r.ContentLength)
	}
	if mode.chunked() {
		return chunkedBody(&sc.hdr, a, mode, raw, checks)
	}
	if mode == modeHash {
		want := make([]byte, len(sum))
		copy(want, sum[:])
		checks = append(checks, check{h: sha256.New(), want: want, code: s3err.XAmzContentSHA256Mismatch})
	}
	if len(checks) == 0 && r.ContentLength < 0 {
		return raw, -1, nil // nothing to verify: no digest, no length
	}
	return newVerifyReader(raw, r.ContentLength, checks, nil), r.ContentLength, nil
}

// emptyBody verifies the checks of an empty payload at once.
func emptyBody(mode payloadMode, sum *[32]byte, checks []check) (io.Reader, int64, error) {
	if mode == modeHash && *sum != emptySum {
		return nil, 0, s3err.New(s3err.XAmzContentSHA256Mismatch, "")
	}
	for i := range checks {
		if err := (&verifyReader{}).verify(&checks[i]); err != nil {
			return nil, 0, err
		}
	}
	return http.NoBody, 0, nil
}

// failedBody is a body whose first read fails with err.
type failedBody struct{ err error }

func (f failedBody) Read([]byte) (int, error) { return 0, f.err }

// chunkedBody decodes an aws-chunked body and verifies its payload.
func chunkedBody(h *headerIndex, a *authInfo, mode payloadMode, raw io.Reader, checks []check) (io.Reader, int64, error) {
	decoded, err := decodedLength(h)
	if err != nil {
		return nil, 0, err
	}
	var names []string
	if mode.trailer() {
		if names, checks, err = trailerChecks(h, checks); err != nil {
			return nil, 0, err
		}
	}
	cr := newChunkedReader(raw, chunkedConfig{
		signed:   mode != modeUnsignedChunksTrailer,
		trailers: mode.trailer(),
		declared: names,
		decoded:  decoded,
		key:      a.key,
		seed:     a.seed,
		amzDate:  a.amzDate,
		scope:    a.scope,
	})
	return newVerifyReader(cr, decoded, checks, cr), decoded, nil
}

// decodedLength reads x-amz-decoded-content-length.
func decodedLength(h *headerIndex) (int64, error) {
	s := h.get(hDecodedLength)
	if s == "" {
		return 0, s3err.New(s3err.MissingContentLength, "aws-chunked uploads must send x-amz-decoded-content-length.")
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n < 0 {
		return 0, s3err.New(s3err.InvalidArgument, "x-amz-decoded-content-length must be a non-negative integer.")
	}
	return n, nil
}

// headerChecks returns the checks of Content-MD5 and x-amz-checksum-*
// headers. The checksum headers of CompleteMultipartUpload (POST with
// uploadId) describe the whole object, not the XML body, so they are left
// to the handler.
func headerChecks(r *Request, sc *scratch) ([]check, error) {
	var checks []check
	if sc.hdr.has(hContentMD5) {
		want, ok := decodeDigest(sc.hdr.get(hContentMD5), 16)
		if !ok {
			return nil, s3err.New(s3err.InvalidDigest, "")
		}
		checks = append(checks, check{h: newMD5(), want: want, code: s3err.BadDigest})
	}
	if r.Method == http.MethodPost && sc.has("uploadId") {
		return checks, nil
	}
	h := &sc.hdr
	lo, hi := h.prefixed(checksumPrefix)
	for p := lo; p < hi; p++ {
		k := h.name(p)
		if len(k) == len(checksumPrefix) || (p > lo && compareFold(k, h.name(p-1)) == 0) {
			continue // the first value of a name counts
		}
		alg, ok := lookupChecksum(k)
		if !ok {
			continue // x-amz-checksum-algorithm, -type, -mode: not digests
		}
		want, ok := decodeDigest(h.value(p), alg.size)
		if !ok {
			return nil, s3err.New(s3err.InvalidArgument, "Value for "+alg.name+" header is invalid.")
		}
		checks = append(checks, check{h: alg.new(), want: want, code: s3err.BadDigest, size: alg.size})
	}
	return checks, nil
}

// trailerChecks reads the x-amz-trailer names and adds a check for each
// checksum among them.
func trailerChecks(h *headerIndex, checks []check) ([]string, []check, error) {
	var names []string
	lo, hi := h.run("x-amz-trailer")
	for p := lo; p < hi; p++ {
		v := h.value(p)
		for v != "" {
			var name string
			name, v, _ = strings.Cut(v, ",")
			name = strings.ToLower(strings.TrimSpace(name))
			if name == "" {
				continue
			}
			names = append(names, name)
			if !strings.HasPrefix(name, checksumPrefix) {
				continue
			}
			alg, ok := lookupChecksum(name)
			if !ok {
				return nil, nil, s3err.New(s3err.InvalidArgument, "Unsupported trailing checksum "+quoteShort(name)+".")
			}
			checks = append(checks, check{h: alg.new(), trailer: alg.name, code: s3err.BadDigest, size: alg.size})
		}
	}
	if len(names) > maxTrailers {
		return nil, nil, s3err.New(s3err.InvalidArgument, "Too many trailers in x-amz-trailer.")
	}
	return names, checks, nil
}
