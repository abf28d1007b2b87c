// Shared test helpers: credentials, turning a request signed by minio-go's
// signer into a Request, and asserting S3 error codes.
package sigv4

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/granary-dev/granary/api/s3err"
	md5simd "github.com/minio/md5-simd"
)

const (
	testAK     = "AKIAIOSFODNN7EXAMPLE"
	testSK     = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	testRegion = "us-east-1"
	testHost   = "granary.test:9000"
)

// newVerifier returns a Verifier knowing testAK, with the real clock (the
// minio-go signer stamps requests with time.Now).
func newVerifier() *Verifier {
	return &Verifier{Creds: StaticCredentials{testAK: testSK, "other": "other-secret"}}
}

// fixedVerifier returns a Verifier whose clock is stopped at now.
func fixedVerifier(now time.Time) *Verifier {
	v := newVerifier()
	v.Now = func() time.Time { return now }
	return v
}

// newHTTPRequest builds a client-side request for the signer.
func newHTTPRequest(t testing.TB, method, url string, body []byte) *http.Request {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// fromHTTP converts a signed client request to what the api layer would
// hand Verify: the escaped path and query as sent, the headers, the body.
func fromHTTP(req *http.Request) *Request {
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	var body io.Reader
	if req.Body != nil {
		body = req.Body
	}
	cl := req.ContentLength
	if cl == 0 && req.Body != nil && req.Body != http.NoBody {
		cl = -1
	}
	return &Request{
		Method:        req.Method,
		RawPath:       req.URL.EscapedPath(),
		RawQuery:      req.URL.RawQuery,
		Host:          host,
		Header:        req.Header.Clone(),
		Body:          body,
		ContentLength: cl,
	}
}

// wantCode fails unless err is an *s3err.Error with code.
func wantCode(t testing.TB, err error, code s3err.Code) {
	t.Helper()
	e, ok := s3err.As(err)
	if !ok {
		t.Fatalf("want %s, got %v (%T)", code, err, err)
	}
	if e.Code != code {
		t.Fatalf("want %s, got %s: %s", code, e.Code, e.Description())
	}
}

// mustVerify runs Verify and fails the test on error.
func mustVerify(t testing.TB, v *Verifier, r *Request) *Result {
	t.Helper()
	res, err := v.Verify(r)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	return res
}

// readBody reads res.Body to its end.
func readBody(res *Result) ([]byte, error) {
	return io.ReadAll(res.Body)
}

// sha256Hex is the hex SHA-256 of b.
func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// payloadOf returns n bytes of deterministic, non-repeating data.
func payloadOf(n int) []byte {
	b := make([]byte, n)
	x := uint32(2463534242)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}

// sha256Hasher adapts sha256 to the md5simd.Hasher the streaming signer wants.
type sha256Hasher struct{ hash.Hash }

func (sha256Hasher) Close() {}

func newSHA256Hasher() md5simd.Hasher { return sha256Hasher{sha256.New()} }
