// Shared test helpers: credentials, turning a request signed by minio-go's
// signer into a Request, and asserting S3 error codes.
package sigv4

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"hash"
	"io"
	"net/http"
	"slices"
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
		Header:        headerOf(req.Header),
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

// headerOf turns an http.Header into a Header (fields of one name in
// order; names in the order of a map, which Verify does not depend on).
func headerOf(h http.Header) Header {
	var out Header
	for k, vals := range h {
		for _, v := range vals {
			out = append(out, Field{k, v})
		}
	}
	return out
}

// indexOf indexes h as Verify does.
func indexOf(h Header) *headerIndex {
	x := &headerIndex{}
	x.index(h)
	return x
}

// The http.Header methods the tests use, over a Header.

func (h Header) Get(name string) string {
	if v := h.Values(name); len(v) > 0 {
		return v[0]
	}
	return ""
}

func (h Header) Values(name string) []string {
	var out []string
	for _, f := range h {
		if compareFold(f.Name, name) == 0 {
			out = append(out, f.Value)
		}
	}
	return out
}

func (h *Header) Del(name string) {
	*h = slices.DeleteFunc(*h, func(f Field) bool { return compareFold(f.Name, name) == 0 })
}

func (h *Header) Set(name, value string) {
	h.Del(name)
	*h = append(*h, Field{http.CanonicalHeaderKey(name), value})
}

func (h Header) Clone() Header { return slices.Clone(h) }

// boto3Get returns a GET signed at now as boto3 signs it, with the eight
// header fields boto3 sends, in its order.
func boto3Get(now time.Time) *Request {
	r := &Request{
		Method: http.MethodGet, RawPath: "/bucket/datasets/imagenet/train/n01440764/img_0001.JPEG",
		Host: testHost, ContentLength: -1,
		Header: Header{
			{"Host", testHost},
			{"Accept-Encoding", "identity"},
			{"User-Agent", "Boto3/1.35.0 md/Botocore#1.35.0 ua/2.0 os/linux#6.8.0 md/arch#x86_64 lang/python#3.12.3 md/pyimpl#CPython cfg/retry-mode#legacy Botocore/1.35.0"},
			{"X-Amz-Date", now.UTC().Format(amzDateLayout)},
			{"X-Amz-Content-SHA256", emptySHA256},
			{"amz-sdk-invocation-id", "0b4f6d4e-7f1a-4c43-9a57-3c0e7d1f2b9a"},
			{"amz-sdk-request", "attempt=1; max=5"},
		},
	}
	day := now.UTC().Format("20060102")
	a := authInfo{
		scope: day + "/" + testRegion + "/s3/aws4_request", date: day, region: testRegion,
		amzDate: now.UTC().Format(amzDateLayout), signedHeaders: "host;x-amz-content-sha256;x-amz-date",
		payload: emptySHA256,
	}
	auth := "AWS4-HMAC-SHA256 Credential=" + testAK + "/" + a.scope + ", SignedHeaders=" + a.signedHeaders +
		", Signature=" + referenceSignature(r, &a)
	r.Header = slices.Insert(r.Header, 5, Field{"Authorization", auth})
	return r
}

// sigV2Get returns a GET signed at now with SigV2, as boto3 signs it with
// signature_version "s3": a Date header, its usual fields.
func sigV2Get(now time.Time) *Request {
	date := now.UTC().Format(http.TimeFormat)
	r := &Request{
		Method: http.MethodGet, RawPath: "/bucket/datasets/imagenet/train/n01440764/img_0001.JPEG",
		Host: testHost, ContentLength: -1,
		Header: Header{
			{"Host", testHost},
			{"Accept-Encoding", "identity"},
			{"User-Agent", "Boto3/1.35.0 md/Botocore#1.35.0 ua/2.0 os/linux#6.8.0 md/arch#x86_64 lang/python#3.12.3 md/pyimpl#CPython cfg/retry-mode#legacy Botocore/1.35.0"},
			{"Date", date},
			{"amz-sdk-invocation-id", "0b4f6d4e-7f1a-4c43-9a57-3c0e7d1f2b9a"},
			{"amz-sdk-request", "attempt=1; max=5"},
		},
	}
	mac := hmac.New(sha1.New, []byte(testSK))
	mac.Write([]byte("GET\n\n\n" + date + "\n" + r.RawPath))
	sig := base64.StdEncoding.EncodeToString(mac.Sum(nil))
	r.Header = slices.Insert(r.Header, 4, Field{"Authorization", "AWS " + testAK + ":" + sig})
	return r
}
