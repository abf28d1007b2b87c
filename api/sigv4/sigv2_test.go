// Signature Version 2: AWS's published examples, minio-go's SignV2 and
// PreSignV2 as oracles, the date forms clients sign, and AWS's errors.
package sigv4

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/granary-dev/granary/api/s3err"
	"github.com/minio/minio-go/v7/pkg/signer"
)

// v2Sign is base64(HMAC-SHA1(testSK, sts)).
func v2Sign(sts string) string {
	m := hmac.New(sha1.New, []byte(testSK))
	m.Write([]byte(sts))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// v2StringToSign is the string to sign Verify builds for r in date form d.
func v2StringToSign(r *Request, d v2Date) string {
	sc := getScratch()
	defer putScratch(sc)
	sc.parseQuery(r.RawQuery)
	sc.hdr.index(r.Header)
	return string(appendV2StringToSign(nil, r, sc, v2Form{date: d, keepEq: true, path: v2PathAsSent}))
}

// The examples of AWS's "Signing and authenticating REST requests"
// (SigV2), each with the string to sign and the signature AWS published.
func TestV2AWSExamples(t *testing.T) {
	cases := []struct {
		name, method, vbucket, path, query string
		header                             map[string]string
		sts, sig                           string
	}{
		{"object GET", "GET", "awsexamplebucket1", "/photos/puppy.jpg", "",
			map[string]string{"Date": "Tue, 27 Mar 2007 19:36:42 +0000"},
			"GET\n\n\nTue, 27 Mar 2007 19:36:42 +0000\n/awsexamplebucket1/photos/puppy.jpg", "qgk2+6Sv9/oM7G3qLEjTH1a1l1g="},
		{"object PUT", "PUT", "awsexamplebucket1", "/photos/puppy.jpg", "",
			map[string]string{"Date": "Tue, 27 Mar 2007 21:15:45 +0000", "Content-Type": "image/jpeg"},
			"PUT\n\nimage/jpeg\nTue, 27 Mar 2007 21:15:45 +0000\n/awsexamplebucket1/photos/puppy.jpg", "iqRzw+ileNPu1fhspnRs8nOjjIA="},
		{"list", "GET", "awsexamplebucket1", "/", "prefix=photos&max-keys=50&marker=puppy",
			map[string]string{"Date": "Tue, 27 Mar 2007 19:42:41 +0000"},
			"GET\n\n\nTue, 27 Mar 2007 19:42:41 +0000\n/awsexamplebucket1/", "m0WP8eCtspQl5Ahe6L1SozdX9YA="},
		{"fetch acl", "GET", "awsexamplebucket1", "/", "acl",
			map[string]string{"Date": "Tue, 27 Mar 2007 19:44:46 +0000"},
			"GET\n\n\nTue, 27 Mar 2007 19:44:46 +0000\n/awsexamplebucket1/?acl", "82ZHiFIjc+WbcwFKGUVEQspPn+0="},
		{"delete with x-amz-date", "DELETE", "", "/awsexamplebucket1/photos/puppy.jpg", "",
			map[string]string{"Date": "Tue, 27 Mar 2007 21:20:27 +0000", "X-Amz-Date": "Tue, 27 Mar 2007 21:20:26 +0000"},
			"DELETE\n\n\nTue, 27 Mar 2007 21:20:26 +0000\n/awsexamplebucket1/photos/puppy.jpg", "XbyTlbQdu9Xw5o8P4iMwPktxQd8="},
		{"upload with x-amz headers", "PUT", "static.example.com", "/db-backup.dat.gz", "",
			map[string]string{
				"Date": "Tue, 27 Mar 2007 21:06:08 +0000", "Content-Type": "application/x-download",
				"Content-Md5": "4gJE4saaMU4BqNR0kLY+lw==", "X-Amz-Acl": "public-read",
				"X-Amz-Meta-Reviewedby": "joe@example.com,jane@example.com", "X-Amz-Meta-Filechecksum": "0x02661779",
				"X-Amz-Meta-Checksumalgorithm": "crc32",
			},
			"PUT\n4gJE4saaMU4BqNR0kLY+lw==\napplication/x-download\nTue, 27 Mar 2007 21:06:08 +0000\n" +
				"x-amz-acl:public-read\nx-amz-meta-checksumalgorithm:crc32\nx-amz-meta-filechecksum:0x02661779\n" +
				"x-amz-meta-reviewedby:joe@example.com,jane@example.com\n/static.example.com/db-backup.dat.gz",
			"jtBQa0Aq+DkULFI8qrpwIjGEx0E="},
		{"list buckets", "GET", "", "/", "",
			map[string]string{"Date": "Wed, 28 Mar 2007 01:29:59 +0000"},
			"GET\n\n\nWed, 28 Mar 2007 01:29:59 +0000\n/", "qGdzdERIC03wnaRNKh6OqZehG9s="},
		{"unicode keys", "GET", "dictionary", "/fran%C3%A7ais/pr%c3%a9f%c3%a8re", "",
			map[string]string{"Date": "Wed, 28 Mar 2007 01:49:49 +0000"},
			"GET\n\n\nWed, 28 Mar 2007 01:49:49 +0000\n/dictionary/fran%C3%A7ais/pr%c3%a9f%c3%a8re", "DNEZGsoieTZ92F3bUfSPQcbGmlM="},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := Header{}
			for k, v := range c.header {
				h.Set(k, v)
			}
			h.Set("Authorization", "AWS "+testAK+":"+c.sig)
			r := &Request{Method: c.method, RawPath: c.path, RawQuery: c.query, Header: h, VirtualBucket: c.vbucket}
			forms := v2HeaderDates(nil, indexOf(h))
			found := false
			for _, d := range forms {
				found = found || v2StringToSign(r, d) == c.sts
			}
			if !found {
				t.Fatalf("no string to sign is AWS's:\n%q\nfirst built:\n%q", c.sts, v2StringToSign(r, forms[0]))
			}
			if v2Sign(c.sts) != c.sig {
				t.Fatalf("signature of AWS's string: %s, AWS says %s", v2Sign(c.sts), c.sig)
			}
			if h.Get("Content-Md5") != "" {
				return // the body is not published: Verify would check its digest
			}
			date, _ := v2RequestTime(indexOf(h))
			mustVerify(t, fixedVerifier(date.Add(time.Minute)), r)
			_, err := fixedVerifier(date.Add(time.Hour)).Verify(r)
			wantCode(t, err, s3err.RequestTimeTooSkewed)
		})
	}
}

// AWS's presigned (query string) example.
func TestV2AWSExamplePresigned(t *testing.T) {
	r := &Request{
		Method: http.MethodGet, RawPath: "/photos/puppy.jpg", VirtualBucket: "johnsmith", Header: headerOf(http.Header{}),
		RawQuery: "AWSAccessKeyId=" + testAK + "&Expires=1175139620&Signature=NpgCjnDzrM%2BWFzoENXmpNDUsSn8%3D",
	}
	mustVerify(t, fixedVerifier(time.Unix(1175139620, 0)), r)
	_, err := fixedVerifier(time.Unix(1175139621, 0)).Verify(r)
	wantCode(t, err, s3err.AccessDenied)
	if !strings.Contains(err.Error(), "Request has expired") {
		t.Fatalf("expired: %v", err)
	}
	// The signature sent with a raw '+' (decoded as a space) still holds.
	r.RawQuery = strings.Replace(r.RawQuery, "%2B", "+", 1)
	mustVerify(t, fixedVerifier(time.Unix(1175139000, 0)), r)
}

// minio-go's SignV2 and PreSignV2 sign requests Verify accepts, path and
// virtual-host style, with sub-resources, overrides and x-amz-* headers.
func TestV2MinioSigner(t *testing.T) {
	v := newVerifier()
	for _, u := range []string{
		"/bucket/key",
		"/bucket/a%20b/%E6%97%A5%E6%9C%AC+plus",
		"/bucket/key?uploads=",
		"/bucket/key?partNumber=2&uploadId=abc%2Fdef",
		"/bucket/key?response-content-type=text%2Fplain&tagging=&prefix=ignored",
		"/bucket?list-type=2&prefix=a%2Fb&delimiter=%2F",
	} {
		for _, vhost := range []bool{false, true} {
			host, vbucket, path := testHost, "", u
			if vhost {
				host, vbucket, path = "bucket."+testHost, "bucket", strings.TrimPrefix(u, "/bucket")
				if path == "" || path[0] == '?' {
					path = "/" + path
				}
			}
			req := newHTTPRequest(t, http.MethodGet, "http://"+host+path, nil)
			req.Header.Set("X-Amz-Meta-Who", "me")
			r := fromHTTP(signer.SignV2(*req, testAK, testSK, vhost))
			r.VirtualBucket = vbucket
			if res := mustVerify(t, v, r); res.AccessKey != testAK {
				t.Fatalf("%s: access key %q", u, res.AccessKey)
			}
			req = newHTTPRequest(t, http.MethodGet, "http://"+host+path, nil)
			r = fromHTTP(signer.PreSignV2(*req, testAK, testSK, 600, vhost))
			r.VirtualBucket = vbucket
			mustVerify(t, v, r)
		}
	}
}

// A SigV2 PUT's body is checked against its Content-MD5, and read whole.
func TestV2PutBody(t *testing.T) {
	body := payloadOf(5000)
	req := newHTTPRequest(t, http.MethodPut, "http://"+testHost+"/bucket/key", body)
	req.Header.Set("Content-Md5", base64.StdEncoding.EncodeToString(md5Of(body)))
	r := fromHTTP(signer.SignV2(*req, testAK, testSK, false))
	got, err := readBody(mustVerify(t, newVerifier(), r))
	if err != nil || string(got) != string(body) {
		t.Fatalf("body: %d bytes, %v", len(got), err)
	}

	req = newHTTPRequest(t, http.MethodPut, "http://"+testHost+"/bucket/key", body)
	req.Header.Set("Content-Md5", base64.StdEncoding.EncodeToString(md5Of([]byte("other"))))
	r = fromHTTP(signer.SignV2(*req, testAK, testSK, false))
	_, err = readBody(mustVerify(t, newVerifier(), r))
	wantCode(t, err, s3err.BadDigest)
}

// Each date form a client may sign with x-amz-date is accepted; any other
// date in the slot is not.
func TestV2DateForms(t *testing.T) {
	now := time.Now().UTC()
	amz := now.Format(time.RFC1123Z)
	date := now.Format(http.TimeFormat)
	for _, d := range []v2Date{{slot: "", amz: true}, {slot: amz, amz: false}, {slot: date, amz: true}, {slot: "junk", amz: true}} {
		h := Header{{"Date", date}, {"X-Amz-Date", amz}}
		r := &Request{Method: http.MethodGet, RawPath: "/bucket/key", Header: h}
		r.Header.Set("Authorization", "AWS "+testAK+":"+v2Sign(v2StringToSign(r, d)))
		_, err := newVerifier().Verify(r)
		if d.slot == "junk" {
			wantCode(t, err, s3err.SignatureDoesNotMatch)
		} else if err != nil {
			t.Fatalf("date form %+v: %v", d, err)
		}
	}
}

func TestV2Errors(t *testing.T) {
	v := newVerifier()
	signedWith := func(k, val string) func() *Request {
		return func() *Request {
			req := newHTTPRequest(t, http.MethodGet, "http://"+testHost+"/bucket/key?versionId=3", nil)
			req.Header.Set(k, val)
			return fromHTTP(signer.SignV2(*req, testAK, testSK, false))
		}
	}
	signed := signedWith("X-Amz-Meta-A", "1")
	streaming := signedWith("X-Amz-Content-Sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD")
	presigned := func() *Request {
		req := newHTTPRequest(t, http.MethodGet, "http://"+testHost+"/bucket/key", nil)
		return fromHTTP(signer.PreSignV2(*req, testAK, testSK, 600, false))
	}
	setQuery := func(r *Request, k, val string) {
		q, _ := url.ParseQuery(r.RawQuery)
		q.Set(k, val)
		r.RawQuery = q.Encode()
	}
	cases := []struct {
		name   string
		make   func() *Request
		mutate func(r *Request)
		code   s3err.Code
	}{
		{"tampered path", signed, func(r *Request) { r.RawPath = "/bucket/kez" }, s3err.SignatureDoesNotMatch},
		{"tampered sub-resource", signed, func(r *Request) { r.RawQuery = "versionId=4" }, s3err.SignatureDoesNotMatch},
		{"tampered x-amz header", signed, func(r *Request) { r.Header.Set("X-Amz-Meta-A", "2") }, s3err.SignatureDoesNotMatch},
		{"added x-amz header", signed, func(r *Request) { r.Header.Set("X-Amz-Meta-B", "2") }, s3err.SignatureDoesNotMatch},
		{"tampered method", signed, func(r *Request) { r.Method = http.MethodDelete }, s3err.SignatureDoesNotMatch},
		{"content-type added", signed, func(r *Request) { r.Header.Set("Content-Type", "text/plain") }, s3err.SignatureDoesNotMatch},
		{"other key's secret", signed, func(r *Request) {
			r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), testAK, "other", 1))
		}, s3err.SignatureDoesNotMatch},
		{"unknown key", signed, func(r *Request) {
			r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), testAK, "NOPE", 1))
		}, s3err.InvalidAccessKeyID},
		{"no colon", signed, func(r *Request) { r.Header.Set("Authorization", "AWS "+testAK) }, s3err.InvalidArgument},
		{"not base64", signed, func(r *Request) { r.Header.Set("Authorization", "AWS "+testAK+":!!") }, s3err.SignatureDoesNotMatch},
		{"no date", signed, func(r *Request) { r.Header.Del("Date") }, s3err.AccessDenied},
		{"old date", signed, func(r *Request) {
			r.Header.Set("Date", time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat))
		}, s3err.RequestTimeTooSkewed},
		{"signed chunks", streaming, func(*Request) {}, s3err.InvalidRequest},
		{"both mechanisms", signed, func(r *Request) { r.RawQuery += "&Signature=abc" }, s3err.InvalidArgument},
		{"presigned tampered", presigned, func(r *Request) { r.RawPath = "/bucket/other" }, s3err.SignatureDoesNotMatch},
		{"presigned later expiry", presigned, func(r *Request) {
			setQuery(r, "Expires", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10))
		}, s3err.SignatureDoesNotMatch},
		{"presigned expired", presigned, func(r *Request) {
			setQuery(r, "Expires", strconv.FormatInt(time.Now().Add(-time.Second).Unix(), 10))
		}, s3err.AccessDenied},
		{"presigned bad expires", presigned, func(r *Request) { setQuery(r, "Expires", "soon") }, s3err.AccessDenied},
		{"presigned no signature", presigned, func(r *Request) { setQuery(r, "Signature", "") }, s3err.AccessDenied},
		{"presigned unknown key", presigned, func(r *Request) { setQuery(r, "AWSAccessKeyId", "NOPE") }, s3err.InvalidAccessKeyID},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := c.make()
			if c.name != "signed chunks" {
				mustVerify(t, v, r) // the untouched request is good
			}
			r = c.make()
			c.mutate(r)
			_, err := v.Verify(r)
			wantCode(t, err, c.code)
		})
	}
}

func md5Of(b []byte) []byte {
	h := newMD5()
	h.Write(b)
	return h.Sum(nil)
}

// The strings to sign of botocore (1.29 and 1.43, as their debug logs
// print them) for requests whose path they sign other than as sent.
func TestV2BotocoreForms(t *testing.T) {
	date := time.Now().UTC().Format(http.TimeFormat)
	cases := []struct{ name, path, query, signed string }{
		{"1.43 bucket slash", "/bucket", "list-type=2&prefix=x%2F&encoding-type=url", "/bucket/"},
		{"1.29 operation query", "/bucket", "list-type=2&prefix=x%2F&encoding-type=url", "/bucket?list-type=2"},
		{"empty sub-resource kept", "/bucket/key", "uploads=", "/bucket/key?uploads="},
		{"empty sub-resource bare", "/bucket/key", "uploads=", "/bucket/key?uploads"},
		{"re-encoded path", "/bucket/a+b%2c", "", "/bucket/a%2Bb%2C"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := Header{{"Date", date}}
			h.Set("Authorization", "AWS "+testAK+":"+v2Sign("GET\n\n\n"+date+"\n"+c.signed))
			mustVerify(t, newVerifier(), &Request{Method: http.MethodGet, RawPath: c.path, RawQuery: c.query, Header: h})
			h.Set("Authorization", "AWS "+testAK+":"+v2Sign("GET\n\n\n"+date+"\n"+c.signed+"x"))
			_, err := newVerifier().Verify(&Request{Method: http.MethodGet, RawPath: c.path, RawQuery: c.query, Header: h})
			wantCode(t, err, s3err.SignatureDoesNotMatch)
		})
	}
}
