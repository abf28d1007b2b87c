// Package sigv4 authenticates S3 requests signed with AWS Signature Version 4
// (Authorization header, presigned query, aws-chunked streaming payloads with
// chunk signatures or trailing checksums) or Version 2 (header and presigned
// query, sigv2.go) and verifies their payload.
// It knows nothing of fiber: the api package fills a Request from its
// framework and uses the Result.
package sigv4

import (
	"io"
	"strings"
	"sync/atomic"
	"time"

	"github.com/granary-dev/granary/api/s3err"
)

// Credentials looks up the secret key of an access key.
type Credentials interface {
	Secret(accessKey string) (secret string, ok bool)
}

// StaticCredentials is a Credentials backed by a map of access key to secret.
type StaticCredentials map[string]string

// Secret implements Credentials.
func (s StaticCredentials) Secret(accessKey string) (string, bool) {
	secret, ok := s[accessKey]
	return secret, ok
}

// Request is what Verify needs of an HTTP request.
type Request struct {
	Method   string
	RawPath  string // the path exactly as sent, still percent-encoded
	RawQuery string // the query exactly as sent, without '?'
	Host     string
	Header   Header // the fields as received, read only during Verify
	Body     io.Reader
	// ContentLength is the Content-Length header, -1 if absent.
	ContentLength int64
	// VirtualBucket is the bucket the Host names (virtual-hosted style),
	// "" for a path-style request. SigV2's canonical resource starts with it.
	VirtualBucket string
}

// Result is an authenticated request.
type Result struct {
	AccessKey string
	// Body yields the decoded payload (aws-chunked framing removed). It
	// returns an *s3err.Error (XAmzContentSHA256Mismatch, BadDigest,
	// IncompleteBody, SignatureDoesNotMatch, ...) instead of the payload's
	// final bytes when any check fails, so a consumer that reads to io.EOF
	// has seen only verified bytes.
	Body io.Reader
	// ContentLength is the decoded payload length, -1 if unknown.
	ContentLength int64
}

// Verifier checks signatures. The zero value is not usable: set Creds.
// A Verifier is safe for concurrent use and must not be copied after its
// first Verify (it owns a signing-key cache).
type Verifier struct {
	Creds Credentials
	// Region is the region a credential scope must name; a request
	// scoped to another is refused as AWS refuses it, naming Region. ""
	// accepts any region.
	Region string
	// MaxSkew bounds the difference between the request date and now;
	// 0 means 15 minutes.
	MaxSkew time.Duration
	// Now returns the current time; nil means time.Now.
	Now func() time.Time

	// keys caches derived signing keys; created on first use.
	keys atomic.Pointer[keyCache]
}

// defaultMaxSkew is the clock skew AWS tolerates.
const defaultMaxSkew = 15 * time.Minute

// Verify authenticates r and wraps its body in the checks its signature
// mode asks for. Errors are *s3err.Error.
func (v *Verifier) Verify(r *Request) (*Result, error) {
	res := new(Result)
	if err := v.VerifyInto(r, res); err != nil {
		return nil, err
	}
	return res, nil
}

// VerifyInto is Verify filling a Result the caller holds, so that a
// request's authentication allocates nothing of its own (res escapes
// nowhere new). res is changed only on success.
func (v *Verifier) VerifyInto(r *Request, res *Result) error {
	if v == nil || v.Creds == nil {
		return s3err.New(s3err.InternalError, "sigv4: verifier has no credentials")
	}
	sc := getScratch()
	defer putScratch(sc)
	sc.parseQuery(r.RawQuery)
	sc.hdr.index(r.Header)

	var a authInfo
	if err := v.authenticate(r, sc, &a); err != nil {
		return err
	}
	body, n, err := v.payload(r, &a, sc)
	if err != nil {
		return err
	}
	*res = Result{AccessKey: a.accessKey, Body: body, ContentLength: n}
	return nil
}

// authenticate picks the signature mechanism of r, checks the signature and
// fills a.
func (v *Verifier) authenticate(r *Request, sc *scratch, a *authInfo) error {
	auth := sc.hdr.get(hAuthorization)
	presigned := sc.has("X-Amz-Algorithm") || sc.has("X-Amz-Credential") || sc.has("X-Amz-Signature")
	var err error
	switch {
	case auth != "" && (presigned || isV2Query(sc)):
		return s3err.New(s3err.InvalidArgument, "Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter, Signature query string parameter or the Authorization header should be specified.")
	case strings.HasPrefix(auth, v2Prefix):
		return v.fromV2Header(r, sc, auth, a)
	case auth != "":
		err = v.fromHeader(r, sc, auth, a)
	case presigned:
		err = v.fromQuery(r, sc, a)
	case isV2Query(sc):
		return v.fromV2Query(r, sc, a)
	default:
		return s3err.New(s3err.AccessDenied, "Anonymous access is not allowed: sign requests with AWS Signature Version 4 or 2.")
	}
	if err != nil {
		return err
	}
	return v.checkSignature(r, sc, a)
}

// now returns the verifier's current time.
func (v *Verifier) now() time.Time {
	if v.Now != nil {
		return v.Now()
	}
	return time.Now()
}

// maxSkew returns the normalised skew bound.
func (v *Verifier) maxSkew() time.Duration {
	if v.MaxSkew > 0 {
		return v.MaxSkew
	}
	return defaultMaxSkew
}

// checkRegion refuses a credential scoped to a region other than v's.
// AWS's answer names both regions in the message, after prefix (which
// says which part of the request holds the scope), and the expected one
// in the error's Region element.
func (v *Verifier) checkRegion(got string, code s3err.Code, prefix string) error {
	if v.Region == "" || got == v.Region {
		return nil
	}
	e := s3err.New(code, prefix+"the region '"+clip(got)+"' is wrong; expecting '"+v.Region+"'")
	e.Region = v.Region
	return e
}

// errUnsupportedAuth is the answer to an Authorization header of
// another scheme (SigV4A, a bearer token, ...).
func errUnsupportedAuth() *s3err.Error {
	return s3err.New(s3err.InvalidRequest, "The authorization mechanism you have provided is not supported. Please use AWS4-HMAC-SHA256 (Signature Version 4) or AWS (Signature Version 2).")
}
