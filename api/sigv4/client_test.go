// End to end through the real door: minio-go's Client (PutObject single and
// multipart, over plain HTTP and TLS, with and without trailing checksums,
// GetObject, presigned GET) against a tiny S3 stand-in whose every request
// goes through Verify and whose every body is read through Result.Body.
package sigv4

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/granary-dev/granary/api/s3err"
	"github.com/granary-dev/granary/internal/faultproxy"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// fakeS3 stores objects in memory after Verify accepted their requests.
type fakeS3 struct {
	v     *Verifier
	mu    sync.Mutex // guards objs, parts and modes
	objs  map[string][]byte
	parts map[int][]byte
	modes map[string]int // x-amz-content-sha256 values seen
	// tamper, when set, flips a byte in the middle of each request body.
	tamper bool
}

func newFakeS3() *fakeS3 {
	return &fakeS3{v: newVerifier(), objs: map[string][]byte{}, parts: map[int][]byte{}, modes: map[string]int{}}
}

func (f *fakeS3) ServeHTTP(w http.ResponseWriter, hr *http.Request) {
	rawPath, rawQuery, _ := strings.Cut(hr.RequestURI, "?")
	var in io.Reader = hr.Body
	f.mu.Lock()
	if f.tamper && hr.ContentLength > 0 {
		in = faultproxy.FlipAt(in, hr.ContentLength/2)
	}
	f.mu.Unlock()
	res, err := f.v.Verify(&Request{
		Method: hr.Method, RawPath: rawPath, RawQuery: rawQuery, Host: hr.Host,
		Header: headerOf(hr.Header), Body: in, ContentLength: hr.ContentLength,
	})
	if err != nil {
		writeErr(w, err)
		return
	}
	body, err := io.ReadAll(res.Body)
	if err != nil {
		writeErr(w, err)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.modes[hr.Header.Get("X-Amz-Content-Sha256")]++
	f.route(w, hr, body)
}

// route answers the few S3 calls minio-go makes for Put and Get.
func (f *fakeS3) route(w http.ResponseWriter, hr *http.Request, body []byte) {
	q := hr.URL.Query()
	key := hr.URL.Path
	switch {
	case hr.Method == http.MethodPost && q.Has("uploads"):
		clear(f.parts)
		fmt.Fprintf(w, "<InitiateMultipartUploadResult><Bucket>b</Bucket><Key>k</Key><UploadId>u1</UploadId></InitiateMultipartUploadResult>")
	case hr.Method == http.MethodPut && q.Has("uploadId"):
		var n int
		fmt.Sscan(q.Get("partNumber"), &n)
		f.parts[n] = body
		w.Header().Set("ETag", etag(body))
	case hr.Method == http.MethodPost && q.Has("uploadId"):
		var all []byte
		for i := 1; i <= len(f.parts); i++ {
			all = append(all, f.parts[i]...)
		}
		f.objs[key] = all
		fmt.Fprintf(w, "<CompleteMultipartUploadResult><Bucket>bucket</Bucket><Key>k</Key><ETag>%s</ETag></CompleteMultipartUploadResult>", etag(all))
	case hr.Method == http.MethodPut:
		f.objs[key] = body
		w.Header().Set("ETag", etag(body))
	case hr.Method == http.MethodGet || hr.Method == http.MethodHead:
		obj, ok := f.objs[key]
		if !ok {
			writeErr(w, s3err.New(s3err.NoSuchKey, ""))
			return
		}
		w.Header().Set("ETag", etag(obj))
		w.Header().Set("Last-Modified", "Mon, 02 Jan 2006 15:04:05 GMT")
		w.Header().Set("Content-Length", fmt.Sprint(len(obj)))
		w.Write(obj)
	default:
		writeErr(w, s3err.New(s3err.NotImplemented, ""))
	}
}

func etag(b []byte) string {
	s := md5.Sum(b)
	return "\"" + hex.EncodeToString(s[:]) + "\""
}

func writeErr(w http.ResponseWriter, err error) {
	e, ok := s3err.As(err)
	if !ok {
		e = s3err.New(s3err.InternalError, err.Error())
	}
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(e.Status())
	w.Write(s3err.Marshal(e, "", "", "", "req"))
}

func newClient(t *testing.T, srv *httptest.Server, secure bool, ak, sk string) *minio.Client {
	t.Helper()
	c, err := minio.New(strings.TrimPrefix(strings.TrimPrefix(srv.URL, "https://"), "http://"), &minio.Options{
		Creds:           credentials.NewStaticV4(ak, sk, ""),
		Secure:          secure,
		Region:          "eu-central-1",
		Transport:       srv.Client().Transport,
		TrailingHeaders: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestMinioClientEndToEnd(t *testing.T) {
	ctx := context.Background()
	for _, secure := range []bool{false, true} {
		f := newFakeS3()
		srv := httptest.NewUnstartedServer(f)
		if secure {
			srv.StartTLS()
		} else {
			srv.Start()
		}
		c := newClient(t, srv, secure, testAK, testSK)
		cases := []struct {
			key  string
			size int
			opts minio.PutObjectOptions
		}{
			{"plain", 100000, minio.PutObjectOptions{}},
			{"dir/with space+plus/ünïcode ✓.bin", 3000, minio.PutObjectOptions{UserMetadata: map[string]string{"Note": "a  b"}}},
			{"unsigned", 70000, minio.PutObjectOptions{DisableContentSha256: true}},
			{"md5", 5000, minio.PutObjectOptions{SendContentMd5: true}},
			{"sha256", 5000, minio.PutObjectOptions{Checksum: minio.ChecksumSHA256}},
			{"empty", 0, minio.PutObjectOptions{}},
			{"multipart", 11 << 20, minio.PutObjectOptions{PartSize: 5 << 20}},
			{"multipart-unsigned", 11 << 20, minio.PutObjectOptions{PartSize: 5 << 20, DisableContentSha256: true}},
		}
		for _, tc := range cases {
			data := payloadOf(tc.size)
			if _, err := c.PutObject(ctx, "bucket", tc.key, bytes.NewReader(data), int64(len(data)), tc.opts); err != nil {
				t.Fatalf("secure=%v put %s: %v", secure, tc.key, err)
			}
			obj, err := c.GetObject(ctx, "bucket", tc.key, minio.GetObjectOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(obj)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("secure=%v get %s: %d bytes, %v", secure, tc.key, len(got), err)
			}
			obj.Close()
		}
		checkPresignedGet(t, c, srv)
		checkWrongSecret(t, srv, secure)
		checkTamperedInTransit(t, f, c, secure)
		t.Logf("secure=%v payload modes seen: %v", secure, f.modes)
		want := []string{unsignedTrailerMode, unsignedPayload}
		if !secure {
			want = append(want, signedMode, signedTrailerMode)
		}
		for _, m := range want {
			if f.modes[m] == 0 {
				t.Errorf("secure=%v: the client never sent %s", secure, m)
			}
		}
		srv.Close()
	}
}

func checkPresignedGet(t *testing.T, c *minio.Client, srv *httptest.Server) {
	t.Helper()
	u, err := c.PresignedGetObject(context.Background(), "bucket", "dir/with space+plus/ünïcode ✓.bin", 10*time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Get(u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !bytes.Equal(got, payloadOf(3000)) {
		t.Fatalf("presigned get: %d, %d bytes", resp.StatusCode, len(got))
	}
}

func checkWrongSecret(t *testing.T, srv *httptest.Server, secure bool) {
	t.Helper()
	c := newClient(t, srv, secure, testAK, "not-the-secret")
	_, err := c.PutObject(context.Background(), "bucket", "x", bytes.NewReader([]byte("abc")), 3, minio.PutObjectOptions{})
	if err == nil {
		t.Fatal("put with a wrong secret succeeded")
	}
	if resp := minio.ToErrorResponse(err); resp.Code != string(s3err.SignatureDoesNotMatch) {
		t.Fatalf("wrong secret: %v", err)
	}
}

// checkTamperedInTransit flips a byte of each body on its way in: every
// payload mode minio-go uses with checks must make the upload fail, and
// nothing may be stored. (Over TLS minio-go's default single PUT is
// UNSIGNED-PAYLOAD with no checksum: nothing to catch a flip with, by
// design, so that case runs over plain HTTP only.)
func checkTamperedInTransit(t *testing.T, f *fakeS3, c *minio.Client, secure bool) {
	t.Helper()
	f.mu.Lock()
	f.tamper = true
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.tamper = false
		f.mu.Unlock()
	}()
	cases := []minio.PutObjectOptions{{SendContentMd5: true}, {Checksum: minio.ChecksumCRC32}}
	if !secure {
		cases = append(cases, minio.PutObjectOptions{})
	}
	for _, opts := range cases {
		data := payloadOf(100000)
		_, err := c.PutObject(context.Background(), "bucket", "tampered", bytes.NewReader(data), int64(len(data)), opts)
		if err == nil {
			t.Fatalf("tampered upload accepted (%+v)", opts)
		}
		code := minio.ToErrorResponse(err).Code
		if code != string(s3err.SignatureDoesNotMatch) && code != string(s3err.BadDigest) && code != string(s3err.XAmzContentSHA256Mismatch) {
			t.Fatalf("tampered upload: %v", err)
		}
		f.mu.Lock()
		_, stored := f.objs["/bucket/tampered"]
		f.mu.Unlock()
		if stored {
			t.Fatal("a tampered object was stored")
		}
	}
}
