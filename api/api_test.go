// Test harness: a real MinIO for the S3 origin (started once in TestMain),
// a directory origin per test, a real Server on a loopback listener, the
// minio-go client, and raw SigV4-signed requests for what no client sends.
package api

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/signer"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/granary-dev/granary/access"
	"github.com/granary-dev/granary/gateway"
	"github.com/granary-dev/granary/internal/miniotest"
	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/origin/fs"
	s3origin "github.com/granary-dev/granary/store/origin/s3"
)

const (
	testAccess = "granary-test-access"
	testSecret = "granary-test-secret-key"
	testRegion = "us-east-1"
)

// The MinIO behind every S3-origin test, shared by the package (each test
// uses buckets of its own). It starts on first use, so unit tests and fuzz
// workers do not pay for it, and TestMain stops it.
var (
	minioOnce   sync.Once
	minioServer *miniotest.Server
	minioErr    error
)

func sharedMinIO(t testing.TB) *miniotest.Server {
	t.Helper()
	minioOnce.Do(func() { minioServer, minioErr = miniotest.Start() })
	if minioErr != nil {
		t.Fatalf("cannot start MinIO: %v", minioErr)
	}
	return minioServer
}

func TestMain(m *testing.M) {
	code := m.Run()
	if minioServer != nil {
		minioServer.Stop()
	}
	os.Exit(code)
}

// backend makes one kind of origin for a test.
type backend struct {
	name string
	// open returns the origin and, for a directory origin, its root.
	open func(t testing.TB) (store.Origin, string)
}

var backends = []backend{
	{"fs", openFS},
	{"s3", openS3},
}

func openFS(t testing.TB) (store.Origin, string) {
	root := t.TempDir()
	o, err := fs.New(fs.Options{Root: root, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	return o, root
}

func openS3(t testing.TB) (store.Origin, string) { return openS3Over(t, nil) }

// openS3Over opens the S3 origin over tr (nil: its own transport).
func openS3Over(t testing.TB, tr http.RoundTripper) (store.Origin, string) {
	m := sharedMinIO(t)
	o, err := s3origin.New(s3origin.Options{
		Endpoint: m.Endpoint, Region: testRegion, AccessKey: m.AccessKey, SecretKey: m.SecretKey, Transport: tr,
	})
	if err != nil {
		t.Fatal(err)
	}
	return o, ""
}

// env is one Server under test and the clients that talk to it.
type env struct {
	srv    *Server
	eng    *gateway.Engine
	addr   string // host:port of the listener
	client *minio.Client
	root   string // the directory origin's root, "" for S3
	reg    *prometheus.Registry
}

// envOption adjusts the Server's options or the Server before it serves.
type envOption func(*nodeOptions)

func newEnv(t *testing.T, b backend, opts ...envOption) *env {
	t.Helper()
	origin, root := b.open(t)
	return newEnvOver(t, gateway.Options{Origin: origin}, root, nil, opts...)
}

// newEnvOver serves an engine of gopts; before, if set, runs on the Server
// before it serves (so it may change unexported fields without a race).
func newEnvOver(t testing.TB, gopts gateway.Options, root string, before func(*Server), opts ...envOption) *env {
	t.Helper()
	return newEnvListening(t, gopts, root, before, nil, opts...)
}

// newEnvListening is newEnvOver serving on wrap(a loopback listener), or
// on the listener itself if wrap is nil.
func newEnvListening(t testing.TB, gopts gateway.Options, root string, before func(*Server), wrap func(net.Listener) net.Listener, opts ...envOption) *env {
	t.Helper()
	eng, err := gateway.New(gopts)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	o := nodeOptions{
		Options: Options{Registerer: reg, Logger: zerolog.Nop()},
		Access:  accessForTest(), Gatherer: reg,
	}
	for _, f := range opts {
		f(&o)
	}
	srv, jobs, err := newNode(eng, o)
	if err != nil {
		t.Fatal(err)
	}
	if before != nil {
		before(srv)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if wrap != nil {
		ln = wrap(ln)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			buf := make([]byte, 1<<20)
			t.Errorf("shutdown: %v; goroutines:\n%s", err, buf[:runtime.Stack(buf, true)])
		}
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
		jobs.Close()
		eng.Close()
	})
	e := &env{srv: srv, eng: eng, addr: ln.Addr().String(), root: root, reg: reg}
	e.client = e.newClient(t, nil)
	if o.TLS == nil { // newTLSEnv waits for an HTTPS server itself
		awaitReady(t, "http://"+e.addr+"/healthz")
	}
	return e
}

// newClient returns a minio-go client of e; tr, if set, is its transport.
func (e *env) newClient(t testing.TB, tr http.RoundTripper) *minio.Client {
	t.Helper()
	c, err := minio.New(e.addr, &minio.Options{
		Creds: credentials.NewStaticV4(testAccess, testSecret, ""), Region: testRegion,
		Transport: tr,
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// awaitReady polls url until it answers 200.
func awaitReady(t testing.TB, url string) {
	t.Helper()
	awaitReadyOver(t, http.DefaultClient, url)
}

// awaitReadyOver polls url with client until it answers 200.
func awaitReadyOver(t testing.TB, client *http.Client, url string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("server at %s not ready: %v", url, err)
		}
		time.Sleep(5 * time.Millisecond) // polling interval, not a wait for an event
	}
}

// uniqueBucket returns a fresh valid bucket name with prefix.
func uniqueBucket(prefix string) string {
	var b [4]byte
	rand.Read(b[:])
	return prefix + "-" + hex.EncodeToString(b[:])
}

// makeBucket creates a fresh bucket through the server.
func (e *env) makeBucket(t testing.TB, prefix string) string {
	t.Helper()
	name := uniqueBucket(prefix)
	if err := e.client.MakeBucket(context.Background(), name, minio.MakeBucketOptions{Region: testRegion}); err != nil {
		t.Fatalf("make bucket %s: %v", name, err)
	}
	return name
}

// put stores data under bucket/key through the server.
func (e *env) put(t testing.TB, bucket, key string, data []byte, opts minio.PutObjectOptions) minio.UploadInfo {
	t.Helper()
	info, err := e.client.PutObject(context.Background(), bucket, key, bytes.NewReader(data), int64(len(data)), opts)
	if err != nil {
		t.Fatalf("put %s/%s: %v", bucket, key, err)
	}
	return info
}

// get reads bucket/key whole through the server.
func (e *env) get(t testing.TB, bucket, key string, opts minio.GetObjectOptions) ([]byte, error) {
	t.Helper()
	obj, err := e.client.GetObject(context.Background(), bucket, key, opts)
	if err != nil {
		return nil, err
	}
	defer obj.Close()
	return io.ReadAll(obj)
}

// accessForTest accepts the test key, unrestricted, and no anonymous
// requests.
func accessForTest() *access.Registry {
	return access.NewRegistry(testAccess, testSecret, nil)
}

// signV4 signs req with the test credentials (header style).
func signV4(req *http.Request) *http.Request {
	return signer.SignV4(*req, testAccess, testSecret, "", testRegion)
}

// rawRequest is a request minio-go would not send, signed with SigV4
// unless unsigned is set.
type rawRequest struct {
	method   string
	path     string // raw, percent-encoded as it goes on the wire
	query    string // raw
	header   http.Header
	body     []byte
	unsigned bool
	secret   string // signing secret; "" means testSecret
	access   string // access key; "" means testAccess
	host     string // Host header; "" means the listener address
	presign  bool   // signed in the query (a presigned URL, an hour) instead of the header
}

// do sends rr to e and returns the response with its body read.
func (e *env) do(t testing.TB, rr rawRequest) (*http.Response, []byte) {
	t.Helper()
	req := e.buildRequest(t, rr)
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatalf("%s %s: %v", rr.method, rr.path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", rr.method, rr.path, err)
	}
	return resp, body
}

func (e *env) buildRequest(t testing.TB, rr rawRequest) *http.Request {
	t.Helper()
	target := "http://" + e.addr + rr.path
	if rr.query != "" {
		target += "?" + rr.query
	}
	req, err := http.NewRequest(rr.method, target, bytes.NewReader(rr.body))
	if err != nil {
		t.Fatal(err)
	}
	req.URL.RawPath = rr.path // keep the path byte-exact
	if rr.body == nil {
		req.Body, req.ContentLength = http.NoBody, 0
	}
	for k, vs := range rr.header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if rr.host != "" {
		req.Host = rr.host
	}
	if rr.unsigned {
		return req
	}
	sum := sha256.Sum256(rr.body)
	req.Header.Set("X-Amz-Content-Sha256", hex.EncodeToString(sum[:]))
	access, secret := testAccess, testSecret
	if rr.access != "" {
		access = rr.access
	}
	if rr.secret != "" {
		secret = rr.secret
	}
	if rr.presign {
		req.Header.Del("X-Amz-Content-Sha256")
		return signer.PreSignV4(*req, access, secret, "", testRegion, 3600)
	}
	return signer.SignV4(*req, access, secret, "", testRegion)
}

// s3Error is the XML error document.
type s3Error struct {
	Code      string `xml:"Code"`
	Message   string `xml:"Message"`
	RequestID string `xml:"RequestId"`
	Resource  string `xml:"Resource"`
}

// errorCode parses an S3 error body; "" if it is not one.
func errorCode(t testing.TB, body []byte) string {
	t.Helper()
	var e s3Error
	if err := xml.Unmarshal(body, &e); err != nil {
		return ""
	}
	return e.Code
}

// expectError asserts status and S3 error code of a raw response.
func expectError(t testing.TB, resp *http.Response, body []byte, status int, code string) {
	t.Helper()
	if resp.StatusCode != status {
		t.Errorf("status = %d, want %d (body %q)", resp.StatusCode, status, body)
	}
	if got := errorCode(t, body); got != code {
		t.Errorf("error code = %q, want %q (body %q)", got, code, body)
	}
	if resp.Header.Get("X-Amz-Request-Id") == "" {
		t.Errorf("no x-amz-request-id on the error response")
	}
}

// minioCode returns the S3 error code of a minio-go error.
func minioCode(err error) string {
	return minio.ToErrorResponse(err).Code
}

// escapeKey percent-encodes a key for a raw path, keeping '/'.
func escapeKey(key string) string {
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		c := key[i]
		if isUnreserved(c) || c == '/' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// randomBytes returns n random bytes.
func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}
