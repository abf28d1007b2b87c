// Header-signed requests: minio-go's SignV4 as the oracle, AWS's published
// example, and every way a header signature can be wrong.
package sigv4

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/granary-dev/granary/api/s3err"
	"github.com/minio/minio-go/v7/pkg/signer"
)

func signedGet(t testing.TB, url string) *Request {
	t.Helper()
	req := newHTTPRequest(t, http.MethodGet, url, nil)
	req.Header.Set("X-Amz-Content-Sha256", emptySHA256)
	req.Header.Set("Range", "bytes=0-9")
	return fromHTTP(signer.SignV4(*req, testAK, testSK, "", testRegion))
}

func TestHeaderSignedGet(t *testing.T) {
	v := newVerifier()
	for _, url := range []string{
		"http://" + testHost + "/bucket/key",
		"http://" + testHost + "/bucket/dir/a%20b%2Bc/%C3%BCnicode%E2%9C%93.txt",
		"http://" + testHost + "/bucket/with+plus/and~tilde!*'()",
		"http://" + testHost + "/bucket?list-type=2&prefix=a%2Fb+c&delimiter=%2F&max-keys=10",
		"http://" + testHost + "/bucket?acl",
		"http://" + testHost + "/",
	} {
		r := signedGet(t, url)
		res := mustVerify(t, v, r)
		if res.AccessKey != testAK || res.ContentLength != 0 {
			t.Fatalf("%s: got %+v", url, res)
		}
		if b, err := readBody(res); err != nil || len(b) != 0 {
			t.Fatalf("%s: body %q %v", url, b, err)
		}
	}
}

// Clients escape paths differently (a space as %20, '~' as %7E, lower-case
// hex); the canonical URI must come out the same.
func TestPathEscapingVariants(t *testing.T) {
	v := newVerifier()
	r := signedGet(t, "http://"+testHost+"/bucket/a%20b/c~d/%C3%BC+x")
	for _, alt := range []string{
		"/bucket/a%20b/c~d/%C3%BC+x",
		"/bucket/a%20b/c%7Ed/%c3%bc%2Bx",
		"/bucket/a%20b/c%7ed/%C3%BC%2B%78",
	} {
		r2 := *r
		r2.RawPath = alt
		mustVerify(t, v, &r2)
	}
	r2 := *r
	r2.RawPath = "/bucket/a%20b/c~d/%C3%BC%20x" // '+' is not a space in a path
	_, err := v.Verify(&r2)
	wantCode(t, err, s3err.SignatureDoesNotMatch)
}

func TestHeaderSignedPut(t *testing.T) {
	body := payloadOf(3000)
	req := newHTTPRequest(t, http.MethodPut, "http://"+testHost+"/bucket/obj", body)
	req.Header.Set("X-Amz-Content-Sha256", sha256Hex(body))
	req.Header.Set("X-Amz-Meta-Color", "  deep   blue  ")
	req.Header.Set("Content-Type", "application/octet-stream")
	r := fromHTTP(signer.SignV4(*req, testAK, testSK, "", "eu-west-3"))
	res := mustVerify(t, newVerifier(), r)
	got, err := readBody(res)
	if err != nil || string(got) != string(body) || res.ContentLength != int64(len(body)) {
		t.Fatalf("body mismatch: %d bytes, %v, length %d", len(got), err, res.ContentLength)
	}
}

// AWS's published "GET Object" example of the S3 SigV4 documentation.
func TestAWSExampleGetObject(t *testing.T) {
	r := &Request{
		Method: http.MethodGet, RawPath: "/test.txt", Host: "examplebucket.s3.amazonaws.com",
		ContentLength: 0,
		Header: headerOf(http.Header{
			"Authorization":        {"AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"},
			"Range":                {"bytes=0-9"},
			"X-Amz-Content-Sha256": {emptySHA256},
			"X-Amz-Date":           {"20130524T000000Z"},
		}),
	}
	v := fixedVerifier(time.Date(2013, 5, 24, 0, 5, 0, 0, time.UTC))
	mustVerify(t, v, r)

	r.Header.Set("Range", "bytes=0-10")
	_, err := v.Verify(r)
	wantCode(t, err, s3err.SignatureDoesNotMatch)
}

// AWS's published "PUT Object" example: a '$' escaped in the path, a Date
// header beside X-Amz-Date, and a hashed body.
func TestAWSExamplePutObject(t *testing.T) {
	body := []byte("Welcome to Amazon S3.")
	mk := func() *Request {
		return &Request{
			Method: http.MethodPut, RawPath: "/test%24file.text", Host: "examplebucket.s3.amazonaws.com",
			Header: headerOf(http.Header{
				"Authorization":        {"AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class,Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd"},
				"Date":                 {"Fri, 24 May 2013 00:00:00 GMT"},
				"X-Amz-Date":           {"20130524T000000Z"},
				"X-Amz-Storage-Class":  {"REDUCED_REDUNDANCY"},
				"X-Amz-Content-Sha256": {"44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"},
			}),
			Body: bytes.NewReader(body), ContentLength: int64(len(body)),
		}
	}
	v := fixedVerifier(time.Date(2013, 5, 24, 0, 0, 0, 0, time.UTC))
	res := mustVerify(t, v, mk())
	if got, err := readBody(res); err != nil || !bytes.Equal(got, body) {
		t.Fatalf("read %q, %v", got, err)
	}
	r := mk()
	r.Body = bytes.NewReader([]byte("Welcome to Amazon S4."))
	res = mustVerify(t, v, r)
	_, err := readBody(res)
	wantCode(t, err, s3err.XAmzContentSHA256Mismatch)
}

func TestHeaderErrors(t *testing.T) {
	v := newVerifier()
	url := "http://" + testHost + "/bucket/key?versionId=3"
	cases := []struct {
		name   string
		mutate func(r *Request)
		code   s3err.Code
	}{
		{"tampered header", func(r *Request) { r.Header.Set("Range", "bytes=0-99") }, s3err.SignatureDoesNotMatch},
		{"tampered query", func(r *Request) { r.RawQuery = "versionId=4" }, s3err.SignatureDoesNotMatch},
		{"added query", func(r *Request) { r.RawQuery += "&x=1" }, s3err.SignatureDoesNotMatch},
		{"tampered path", func(r *Request) { r.RawPath = "/bucket/key2" }, s3err.SignatureDoesNotMatch},
		{"tampered method", func(r *Request) { r.Method = http.MethodDelete }, s3err.SignatureDoesNotMatch},
		{"tampered host", func(r *Request) { r.Host = "evil:9000" }, s3err.SignatureDoesNotMatch},
		{"unknown key", func(r *Request) { replaceAuth(r, testAK+"/", "NOPE/") }, s3err.InvalidAccessKeyID},
		{"other key's secret", func(r *Request) { replaceAuth(r, testAK+"/", "other/") }, s3err.SignatureDoesNotMatch},
		{"short signature", func(r *Request) { replaceAuth(r, "Signature=", "Signature=ab") }, s3err.SignatureDoesNotMatch},
		{"service", func(r *Request) { replaceAuth(r, "/s3/", "/ec2/") }, s3err.AuthorizationHeaderMalformed},
		{"terminal", func(r *Request) { replaceAuth(r, "aws4_request", "aws4_reqest") }, s3err.AuthorizationHeaderMalformed},
		{"scope date", func(r *Request) { setScopeDate(r, "20000101") }, s3err.AuthorizationHeaderMalformed},
		{"no credential", func(r *Request) { replaceAuth(r, "Credential=", "Cred=") }, s3err.AuthorizationHeaderMalformed},
		{"host not signed", func(r *Request) { replaceAuth(r, "host;", "") }, s3err.AuthorizationHeaderMalformed},
		{"unsigned x-amz header", func(r *Request) { r.Header.Set("X-Amz-Meta-Evil", "1") }, s3err.AccessDenied},
		{"bad date", func(r *Request) { r.Header.Set("X-Amz-Date", "2013-05-24") }, s3err.AccessDenied},
		{"no date", func(r *Request) { r.Header.Del("X-Amz-Date") }, s3err.AccessDenied},
		{"bad sigv2", func(r *Request) { r.Header.Set("Authorization", "AWS "+testAK+":c2lnbmF0dXJl") }, s3err.SignatureDoesNotMatch},
		{"sigv4a", func(r *Request) { r.Header.Set("Authorization", "AWS4-ECDSA-P256-SHA256 Credential=x") }, s3err.InvalidRequest},
		{"anonymous", func(r *Request) { r.Header.Del("Authorization") }, s3err.AccessDenied},
		{"expired sigv2 presign", func(r *Request) {
			r.Header.Del("Authorization")
			r.RawQuery = "AWSAccessKeyId=" + testAK + "&Expires=1&Signature=abc"
		}, s3err.AccessDenied},
		{"both mechanisms", func(r *Request) { r.RawQuery += "&X-Amz-Algorithm=AWS4-HMAC-SHA256" }, s3err.InvalidArgument},
		{"payload not hex", func(r *Request) { r.Header.Set("X-Amz-Content-Sha256", "nothex") }, s3err.SignatureDoesNotMatch},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := signedGet(t, url)
			mustVerify(t, v, r) // the untouched request is good
			c.mutate(r)
			_, err := v.Verify(r)
			wantCode(t, err, c.code)
		})
	}
}

func replaceAuth(r *Request, old, repl string) {
	r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), old, repl, 1))
}

func setScopeDate(r *Request, date string) {
	a := r.Header.Get("Authorization")
	i := strings.Index(a, testAK+"/") + len(testAK) + 1
	r.Header.Set("Authorization", a[:i]+date+a[i+8:])
}

func TestClockSkew(t *testing.T) {
	r := signedGet(t, "http://"+testHost+"/bucket/key")
	now := time.Now()
	mustVerify(t, fixedVerifier(now.Add(14*time.Minute)), r)
	mustVerify(t, fixedVerifier(now.Add(-14*time.Minute)), r)
	_, err := fixedVerifier(now.Add(16 * time.Minute)).Verify(r)
	wantCode(t, err, s3err.RequestTimeTooSkewed)
	_, err = fixedVerifier(now.Add(-16 * time.Minute)).Verify(r)
	wantCode(t, err, s3err.RequestTimeTooSkewed)

	v := fixedVerifier(now.Add(2 * time.Minute))
	v.MaxSkew = time.Minute
	_, err = v.Verify(r)
	wantCode(t, err, s3err.RequestTimeTooSkewed)
}

// A request dated by the Date header alone (no X-Amz-Date) signs that date
// in ISO 8601 form, whichever form the Date takes: net/http's "GMT", or
// the "-0000" botocore sends when a Date header was set.
func TestDateHeader(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	for _, date := range []string{now.Format(http.TimeFormat), now.Format("Mon, 02 Jan 2006 15:04:05 -0000")} {
		testDateHeader(t, now, date)
	}
}

func testDateHeader(t *testing.T, now time.Time, date string) {
	r := &Request{
		Method: http.MethodGet, RawPath: "/bucket/key", Host: testHost, ContentLength: 0,
		Header: headerOf(http.Header{
			"Date":                 {date},
			"X-Amz-Content-Sha256": {unsignedPayload},
		}),
	}
	a := authInfo{
		scope:         now.Format("20060102") + "/us-east-1/s3/aws4_request",
		date:          now.Format("20060102"),
		region:        "us-east-1",
		amzDate:       now.Format(amzDateLayout),
		signedHeaders: "date;host",
		payload:       unsignedPayload,
	}
	r.Header.Set("Authorization", "AWS4-HMAC-SHA256   Credential="+testAK+"/"+a.scope+" ,  SignedHeaders=date;host,Signature="+referenceSignature(r, &a))
	mustVerify(t, newVerifier(), r)
}

// Spaces and commas vary between clients; all these forms must parse.
func TestParseAuthorizationVariants(t *testing.T) {
	for _, h := range []string{
		"AWS4-HMAC-SHA256 Credential=AK/20130524/r/s3/aws4_request, SignedHeaders=host;x-amz-date, Signature=abc",
		"AWS4-HMAC-SHA256 Credential=AK/20130524/r/s3/aws4_request,SignedHeaders=host;x-amz-date,Signature=abc",
		"  AWS4-HMAC-SHA256\tCredential=AK/20130524/r/s3/aws4_request ,SignedHeaders=host;x-amz-date ,Signature=abc ",
		"AWS4-HMAC-SHA256 Signature=abc Credential=AK/20130524/r/s3/aws4_request SignedHeaders=host;x-amz-date",
	} {
		a, err := parseAuthorization(h)
		if err != nil {
			t.Fatalf("%q: %v", h, err)
		}
		if a.Credential != "AK/20130524/r/s3/aws4_request" || a.SignedHeaders != "host;x-amz-date" || a.Signature != "abc" {
			t.Fatalf("%q: got %+v", h, a)
		}
	}
	for _, h := range []string{
		"", "AWS4-HMAC-SHA256", "AWS4-HMAC-SHA256Credential=a", "AWS4-HMAC-SHA256 Credential=a",
		"AWS4-HMAC-SHA256 Credential=a, SignedHeaders=host, Signature=x, Signature=y",
		"AWS4-HMAC-SHA256 Credential=a, SignedHeaders=host, Signature=x, Foo=bar",
		"AWS4-HMAC-SHA256 Credential=a, SignedHeaders=, Signature=x",
	} {
		if _, err := parseAuthorization(h); err == nil {
			t.Fatalf("%q parsed", h)
		} else {
			wantCode(t, err, s3err.AuthorizationHeaderMalformed)
		}
	}
}

func TestParseCredentialSlashInKey(t *testing.T) {
	c, msg := parseCredential("team/alice/20240102/any-region/s3/aws4_request")
	if msg != "" || c.accessKey != "team/alice" || c.region != "any-region" || c.date != "20240102" ||
		c.scope != "20240102/any-region/s3/aws4_request" {
		t.Fatalf("got %+v %q", c, msg)
	}
}

// The canonical headers follow SignedHeaders as sent, sorted or not, with
// repeated fields joined in the order received and names in any case.
func TestSignedHeaderOrders(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	for _, signed := range []string{
		"host;range;x-amz-content-sha256;x-amz-date;x-amz-meta-a",
		"x-amz-meta-a;host;x-amz-date;range;x-amz-content-sha256",
		"host;x-amz-meta-a;range;x-amz-content-sha256;x-amz-date",
	} {
		r := &Request{
			Method: http.MethodGet, RawPath: "/bucket/key", Host: testHost, ContentLength: 0,
			Header: Header{
				{"X-AMZ-META-A", " one  two "}, {"Range", "bytes=0-9"}, {"x-amz-date", now.Format(amzDateLayout)},
				{"X-Amz-Content-Sha256", unsignedPayload}, {"x-amz-meta-a", "three"}, {"User-Agent", "t"},
			},
		}
		a := authInfo{
			scope: now.Format("20060102") + "/us-east-1/s3/aws4_request", date: now.Format("20060102"),
			region: "us-east-1", amzDate: now.Format(amzDateLayout), signedHeaders: signed, payload: unsignedPayload,
		}
		auth := "AWS4-HMAC-SHA256 Credential=" + testAK + "/" + a.scope + ",SignedHeaders=" + signed + ",Signature=" + referenceSignature(r, &a)
		r.Header = append(r.Header, Field{"Authorization", auth})
		mustVerify(t, newVerifier(), r)
		r.Header[4].Value = "four" // the second value of a signed name
		_, err := newVerifier().Verify(r)
		wantCode(t, err, s3err.SignatureDoesNotMatch)
	}
}

// TestAppendEscapedPath: a path escaped so is its own canonical URI.
func TestAppendEscapedPath(t *testing.T) {
	got := string(AppendEscapedPath(nil, "/b/dir/k +?#%ü~-_."))
	if want := "/b/dir/k%20%2B%3F%23%25%C3%BC~-_."; got != want {
		t.Fatalf("escaped %q, want %q", got, want)
	}
	if c := string(appendCanonicalURI(nil, got)); c != got {
		t.Fatalf("canonical URI of %q is %q", got, c)
	}
}

// parseAmzDate accepts exactly the dates time.Parse accepts in the
// layout, leap days and the ends of months and days included.
func TestParseAmzDateMatchesTimeParse(t *testing.T) {
	dates := []string{
		"20261130T235959Z", "20240229T000000Z", "20000229T120000Z", "19000229T120000Z",
		"20250229T120000Z", "20261131T000000Z", "20260431T000000Z", "20261231T000000Z",
		"20261301T000000Z", "20260001T000000Z", "20261100T000000Z", "20261130T240000Z",
		"20261130T236000Z", "20261130T235960Z", "2026113T0235959Z", "20261130 235959Z",
		"20261130T235959z", "+0261130T235959Z", "20261130T23595Z", "",
	}
	for m := 1; m <= 12; m++ {
		for _, d := range []int{28, 29, 30, 31, 32} {
			for _, y := range []int{1900, 2000, 2024, 2026} {
				dates = append(dates, fmt.Sprintf("%04d%02d%02dT010203Z", y, m, d))
			}
		}
	}
	for _, s := range dates {
		want, err := time.Parse(amzDateLayout, s)
		got, ok := parseAmzDate(s)
		if ok != (err == nil) || (ok && !got.Equal(want)) {
			t.Errorf("%q: got %v, %v; time.Parse %v, %v", s, got, ok, want, err)
		}
	}
}
