// Presigned URLs: minio-go's PreSignV4 as the oracle, AWS's published
// example, and expiry, validity window and tampering.
package sigv4

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/granary-dev/granary/api/s3err"
	"github.com/minio/minio-go/v7/pkg/signer"
)

func presigned(t testing.TB, method, rawURL string, expires int64, body []byte) *Request {
	t.Helper()
	req := newHTTPRequest(t, method, rawURL, body)
	return fromHTTP(signer.PreSignV4(*req, testAK, testSK, "", testRegion, expires))
}

func TestPresignedGet(t *testing.T) {
	v := newVerifier()
	for _, u := range []string{
		"http://" + testHost + "/bucket/key",
		"http://" + testHost + "/bucket/a%20b/%E6%97%A5%E6%9C%AC+plus?response-content-type=text%2Fplain",
	} {
		r := presigned(t, http.MethodGet, u, 3600, nil)
		res := mustVerify(t, v, r)
		if res.AccessKey != testAK {
			t.Fatalf("access key %q", res.AccessKey)
		}
	}
}

func TestPresignedPutStreamsUnsignedPayload(t *testing.T) {
	body := payloadOf(10000)
	r := presigned(t, http.MethodPut, "http://"+testHost+"/bucket/up", 600, body)
	r.ContentLength = int64(len(body))
	res := mustVerify(t, newVerifier(), r)
	got, err := readBody(res)
	if err != nil || string(got) != string(body) {
		t.Fatalf("body: %d bytes, %v", len(got), err)
	}
}

// AWS's published presigned-URL example of the S3 SigV4 documentation.
func TestAWSExamplePresigned(t *testing.T) {
	r := &Request{
		Method: http.MethodGet, RawPath: "/test.txt", Host: "examplebucket.s3.amazonaws.com",
		RawQuery: "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request" +
			"&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host" +
			"&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404",
		Header: headerOf(http.Header{}), ContentLength: 0,
	}
	v := fixedVerifier(time.Date(2013, 5, 24, 12, 0, 0, 0, time.UTC))
	mustVerify(t, v, r)

	_, err := fixedVerifier(time.Date(2013, 5, 25, 0, 0, 1, 0, time.UTC)).Verify(r)
	wantCode(t, err, s3err.AccessDenied)
	if e, _ := s3err.As(err); !strings.Contains(e.Description(), "expired") {
		t.Fatalf("message %q", e.Description())
	}
}

func TestPresignedErrors(t *testing.T) {
	now := time.Now()
	base := "http://" + testHost + "/bucket/key?partNumber=1"
	cases := []struct {
		name   string
		at     time.Time
		mutate func(r *Request)
		code   s3err.Code
	}{
		{"expired", now.Add(11 * time.Minute), nil, s3err.AccessDenied},
		{"not yet valid", now.Add(-20 * time.Minute), nil, s3err.AccessDenied},
		{"tampered path", now, func(r *Request) { r.RawPath = "/bucket/other" }, s3err.SignatureDoesNotMatch},
		{"tampered param", now, func(r *Request) { setParam(r, "partNumber", "2") }, s3err.SignatureDoesNotMatch},
		{"longer expiry", now, func(r *Request) { setParam(r, "X-Amz-Expires", "6000") }, s3err.SignatureDoesNotMatch},
		{"expiry too long", now, func(r *Request) { setParam(r, "X-Amz-Expires", "604801") }, s3err.AccessDenied},
		{"expiry zero", now, func(r *Request) { setParam(r, "X-Amz-Expires", "0") }, s3err.AccessDenied},
		{"expiry negative", now, func(r *Request) { setParam(r, "X-Amz-Expires", "-5") }, s3err.AccessDenied},
		{"expiry not a number", now, func(r *Request) { setParam(r, "X-Amz-Expires", "soon") }, s3err.AuthorizationQueryParamsError},
		{"no date", now, func(r *Request) { setParam(r, "X-Amz-Date", "") }, s3err.AuthorizationQueryParamsError},
		{"algorithm", now, func(r *Request) { setParam(r, "X-Amz-Algorithm", "AWS4-HMAC-SHA1") }, s3err.AuthorizationQueryParamsError},
		{"credential", now, func(r *Request) { setParam(r, "X-Amz-Credential", "garbage") }, s3err.AuthorizationQueryParamsError},
		{"unknown key", now, func(r *Request) {
			q, _ := url.ParseQuery(r.RawQuery)
			setParam(r, "X-Amz-Credential", strings.Replace(q.Get("X-Amz-Credential"), testAK, "NOPE", 1))
		}, s3err.InvalidAccessKeyID},
		{"unsigned x-amz header", now, func(r *Request) { r.Header.Set("X-Amz-Acl", "public-read") }, s3err.AccessDenied},
		{"bad signature", now, func(r *Request) { setParam(r, "X-Amz-Signature", strings.Repeat("0", 64)) }, s3err.SignatureDoesNotMatch},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := presigned(t, http.MethodGet, base, 600, nil)
			if c.mutate != nil {
				mustVerify(t, newVerifier(), r)
				c.mutate(r)
			}
			_, err := fixedVerifier(c.at).Verify(r)
			wantCode(t, err, c.code)
		})
	}
}

// setParam rewrites one query parameter, keeping the others as they are.
func setParam(r *Request, key, value string) {
	parts := strings.Split(r.RawQuery, "&")
	for i, p := range parts {
		if k, _, _ := strings.Cut(p, "="); k == key {
			parts[i] = key + "=" + url.QueryEscape(value)
		}
	}
	r.RawQuery = strings.Join(parts, "&")
}
