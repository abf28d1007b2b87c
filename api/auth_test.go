// Authentication, presigned URLs, virtual-host style, the admin routes and
// what the logs and metrics record.
package api

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/rs/zerolog"

	"github.com/granary-dev/granary/gateway"
	"github.com/granary-dev/granary/internal/syncbuf"
)

func TestAuth(t *testing.T) {
	e := newEnv(t, backends[0])
	bucket := e.makeBucket(t, "auth")
	e.put(t, bucket, "k", []byte("secret data"), minio.PutObjectOptions{})
	path := "/" + bucket + "/k"
	cases := []struct {
		name   string
		rr     rawRequest
		status int
		code   string
	}{
		{"anonymous", rawRequest{method: http.MethodGet, path: path, unsigned: true}, 403, "AccessDenied"},
		{"anonymous put", rawRequest{method: http.MethodPut, path: path, unsigned: true, body: []byte("x")}, 403, "AccessDenied"},
		{"wrong secret", rawRequest{method: http.MethodGet, path: path, secret: "not-the-secret"}, 403, "SignatureDoesNotMatch"},
		{"unknown key", rawRequest{method: http.MethodGet, path: path, access: "nobody"}, 403, "InvalidAccessKeyId"},
		// Authentication comes before validation: nothing about names leaks.
		{"anonymous bad name", rawRequest{method: http.MethodGet, path: "/A_B/k", unsigned: true}, 403, "AccessDenied"},
		{"anonymous healthz put", rawRequest{method: http.MethodPut, path: "/healthz", unsigned: true}, 403, "AccessDenied"},
	}
	for _, c := range cases {
		resp, body := e.do(t, c.rr)
		if resp.StatusCode != c.status || errorCode(t, body) != c.code {
			t.Errorf("%s: %d %q, want %d %s", c.name, resp.StatusCode, errorCode(t, body), c.status, c.code)
		}
	}
	// A body tampered with after signing fails its payload hash; nothing is stored.
	req := e.buildRequest(t, rawRequest{method: http.MethodPut, path: "/" + bucket + "/tampered", body: []byte("original")})
	req.Body = io.NopCloser(strings.NewReader("tampered"))
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	expectError(t, resp, body, 400, "XAmzContentSHA256Mismatch")
	if _, err := e.client.StatObject(context.Background(), bucket, "tampered", minio.StatObjectOptions{}); minioCode(err) != "NoSuchKey" {
		t.Errorf("tampered body was stored: %v", err)
	}
}

func TestPresigned(t *testing.T) {
	e := newEnv(t, backends[0])
	bucket := e.makeBucket(t, "presign")
	e.put(t, bucket, "dir/file name.txt", []byte("presigned body"), minio.PutObjectOptions{})
	u, err := e.client.PresignedGetObject(context.Background(), bucket, "dir/file name.txt", time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(u.String())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "presigned body" {
		t.Errorf("presigned GET: %d %q", resp.StatusCode, body)
	}

	// A server whose clock is an hour ahead sees the URL as expired.
	origin, root := backends[0].open(t)
	late := newEnvOver(t, gateway.Options{Origin: origin}, root, func(s *Server) {
		s.s3.verifier.Now = func() time.Time { return time.Now().Add(time.Hour) }
	})
	u, err = late.client.PresignedGetObject(context.Background(), bucket, "k", time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err = http.Get(u.String())
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	expectError(t, resp, body, http.StatusForbidden, "AccessDenied")
}

func TestVirtualHost(t *testing.T) {
	const domain = "s3.granary.test"
	e := newEnv(t, backends[0], func(o *nodeOptions) { o.Domains = []string{domain, "other.example"} })
	_, port, _ := net.SplitHostPort(e.addr)
	// Every name resolves to the listener.
	tr := &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, e.addr)
	}}
	defer tr.CloseIdleConnections()
	c, err := minio.New(domain+":"+port, &minio.Options{
		Creds:        credentials.NewStaticV4(testAccess, testSecret, ""),
		Region:       testRegion,
		Transport:    tr,
		BucketLookup: minio.BucketLookupDNS,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	bucket := uniqueBucket("vhost")
	if err := c.MakeBucket(ctx, bucket, minio.MakeBucketOptions{Region: testRegion}); err != nil {
		t.Fatalf("vhost MakeBucket: %v", err)
	}
	data := []byte("virtual host body")
	if _, err := c.PutObject(ctx, bucket, "a/b c", bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{}); err != nil {
		t.Fatalf("vhost put: %v", err)
	}
	obj, err := c.GetObject(ctx, bucket, "a/b c", minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(obj)
	obj.Close()
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("vhost get: %q, %v", got, err)
	}
	// Path style still works, and sees the same object.
	if got, err := e.get(t, bucket, "a/b c", minio.GetObjectOptions{}); err != nil || !bytes.Equal(got, data) {
		t.Errorf("path-style get of vhost object: %q, %v", got, err)
	}
	var keys []string
	for o := range c.ListObjects(ctx, bucket, minio.ListObjectsOptions{Recursive: true}) {
		keys = append(keys, o.Key)
	}
	if len(keys) != 1 || keys[0] != "a/b c" {
		t.Errorf("vhost list: %q", keys)
	}
	// Raw, with an upper-case Host of the second domain.
	resp, body := e.do(t, rawRequest{method: http.MethodGet, path: "/a/b%20c", host: strings.ToUpper(bucket) + ".OTHER.example:" + port})
	if resp.StatusCode != 200 || !bytes.Equal(body, data) {
		t.Errorf("raw vhost GET: %d %q", resp.StatusCode, body)
	}
}

func TestAdminRoutes(t *testing.T) {
	var logs syncbuf.Buffer
	e := newEnv(t, backends[0], func(o *nodeOptions) { o.Logger = zerolog.New(&logs).Level(zerolog.DebugLevel) })
	bucket := e.makeBucket(t, "admin")
	e.put(t, bucket, "k", []byte("v"), minio.PutObjectOptions{})

	resp, body := e.do(t, rawRequest{method: http.MethodGet, path: "/healthz", unsigned: true})
	if resp.StatusCode != 200 || string(body) != "ok" {
		t.Errorf("healthz: %d %q", resp.StatusCode, body)
	}
	resp, body = e.do(t, rawRequest{method: http.MethodGet, path: "/readyz", unsigned: true})
	if resp.StatusCode != 200 || string(body) != "ready" {
		t.Errorf("readyz: %d %q", resp.StatusCode, body)
	}
	resp, body = e.do(t, rawRequest{method: http.MethodGet, path: "/metrics", unsigned: true})
	for _, want := range []string{`granary_requests_total{code="200",op="PutObject"} 1`,
		`granary_request_duration_seconds_count{op="CreateBucket"} 1`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %q:\n%s", want, body)
		}
	}
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Errorf("metrics: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	// Signed, they are S3 requests for buckets of those names.
	for _, p := range []string{"/metrics", "/healthz", "/readyz"} {
		resp, body = e.do(t, rawRequest{method: http.MethodGet, path: p})
		expectError(t, resp, body, http.StatusNotFound, "NoSuchBucket")
	}
	u, err := e.client.PresignedGetObject(context.Background(), bucket, "k", time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	presigned, err := http.Get(u.String())
	if err != nil {
		t.Fatal(err)
	}
	presigned.Body.Close()
	// Every request is in the log under the id its response carried; no
	// secret and no signature ever is. (The GET lane, which answers the
	// presigned GET, logs it once the answer is sent: poll for the line.)
	id := presigned.Header.Get("X-Amz-Request-Id")
	out := logs.String()
	for deadline := time.Now().Add(30 * time.Second); id != "" && !strings.Contains(out, `"request_id":"`+id+`"`) && time.Now().Before(deadline); out = logs.String() {
		time.Sleep(5 * time.Millisecond) // polling interval, not a wait for an event
	}
	if id == "" || !strings.Contains(out, `"request_id":"`+id+`"`) {
		t.Errorf("request id %q not logged in:\n%s", id, out)
	}
	sig := u.Query().Get("X-Amz-Signature")
	for _, secret := range []string{testSecret, sig, "Signature="} {
		if strings.Contains(out, secret) {
			t.Errorf("log holds %q", secret)
		}
	}
}
