// Bad input through raw requests: names and keys that must never reach an
// origin, malformed XML, bodies that are short, too large or fail their
// checks (nothing stored), and sub-resources Granary does not serve.
package api

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/signer"

	"github.com/granary-dev/granary/internal/faultproxy"
)

func TestBadInput(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			e := newEnv(t, b)
			var before []string
			if e.root != "" {
				before = treeOf(t, filepath.Dir(e.root))
			}
			bucket := e.makeBucket(t, "bad")
			t.Run("Names", func(t *testing.T) { testBadNames(t, e, bucket) })
			t.Run("XML", func(t *testing.T) { testBadXML(t, e, bucket) })
			t.Run("Bodies", func(t *testing.T) { testBadBodies(t, e, bucket) })
			t.Run("Unsupported", func(t *testing.T) { testUnsupported(t, e, bucket) })
			if e.root != "" {
				assertContained(t, e, before, bucket)
			}
		})
	}
}

func testBadNames(t *testing.T, e *env, bucket string) {
	for _, name := range []string{"ab", "UPPER", "under_score", "-dash", "dash-", "a..b", "a.-b",
		"192.168.1.1", "xn--punycode", strings.Repeat("a", 64)} {
		resp, body := e.do(t, rawRequest{method: http.MethodPut, path: "/" + name})
		expectError(t, resp, body, http.StatusBadRequest, "InvalidBucketName")
		resp, body = e.do(t, rawRequest{method: http.MethodGet, path: "/" + name + "/key"})
		expectError(t, resp, body, http.StatusBadRequest, "InvalidBucketName")
	}
	badKeys := []struct{ path, code string }{
		{"../escape", "InvalidArgument"},
		{"..%2F..%2Fescape", "InvalidArgument"},
		{"a/../../escape", "InvalidArgument"},
		{"a/./b", "InvalidArgument"},
		{"..", "InvalidArgument"},
		{"nul%00byte", "InvalidArgument"},
		// (Invalid UTF-8 is covered by TestCheckKey: minio-go's signer
		// cannot sign such a path as sent.)
		{strings.Repeat("k", 1025), "KeyTooLongError"},
		{strings.Repeat("%C3%A9", 513), "KeyTooLongError"}, // 1,026 bytes of UTF-8
	}
	for _, k := range badKeys {
		for _, method := range []string{http.MethodPut, http.MethodGet, http.MethodDelete} {
			var body []byte
			if method == http.MethodPut {
				body = []byte("must not be stored")
			}
			resp, rbody := e.do(t, rawRequest{method: method, path: "/" + bucket + "/" + k.path, body: body})
			expectError(t, resp, rbody, http.StatusBadRequest, k.code)
		}
		resp, _ := e.do(t, rawRequest{method: http.MethodHead, path: "/" + bucket + "/" + k.path})
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("HEAD %s: %d", k.path, resp.StatusCode)
		}
	}
	// A key of exactly 1,024 bytes is fine (in path segments a directory
	// origin can hold).
	long := longKey
	resp, body := e.do(t, rawRequest{method: http.MethodPut, path: "/" + bucket + "/" + long, body: []byte("ok")})
	if resp.StatusCode != 200 {
		t.Errorf("1024-byte key: %d %q", resp.StatusCode, body)
	}
	// HEAD of a missing key: 404 and no body.
	resp, body = e.do(t, rawRequest{method: http.MethodHead, path: "/" + bucket + "/missing"})
	if resp.StatusCode != 404 || len(body) != 0 || resp.Header.Get("X-Amz-Request-Id") == "" {
		t.Errorf("HEAD missing: %d, %d body bytes", resp.StatusCode, len(body))
	}
}

func testBadXML(t *testing.T, e *env, bucket string) {
	post := func(body string) (*http.Response, []byte) {
		return e.do(t, rawRequest{method: http.MethodPost, path: "/" + bucket, query: "delete=", body: []byte(body)})
	}
	for _, body := range []string{"", "<Delete><Object><Key>a</Key>", "not xml", "<Other/>", "<Delete></Delete>"} {
		resp, rbody := post(body)
		expectError(t, resp, rbody, http.StatusBadRequest, "MalformedXML")
	}
	var many strings.Builder
	many.WriteString("<Delete>")
	for i := range 1001 {
		fmt.Fprintf(&many, "<Object><Key>k%d</Key></Object>", i)
	}
	many.WriteString("</Delete>")
	resp, rbody := post(many.String())
	expectError(t, resp, rbody, http.StatusBadRequest, "MalformedXML")
	// Per-key errors, and Quiet mode listing only them.
	e.put(t, bucket, "del-me", []byte("x"), minio.PutObjectOptions{})
	resp, rbody = post(`<Delete><Quiet>true</Quiet><Object><Key>del-me</Key></Object><Object><Key>../up</Key></Object></Delete>`)
	if resp.StatusCode != 200 || !bytes.Contains(rbody, []byte("<Key>../up</Key><Code>InvalidArgument</Code>")) ||
		bytes.Contains(rbody, []byte("<Deleted>")) {
		t.Errorf("quiet delete: %d %s", resp.StatusCode, rbody)
	}
	resp, rbody = post(`<Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Object><Key>never</Key></Object></Delete>`)
	if resp.StatusCode != 200 || !bytes.Contains(rbody, []byte("<Deleted><Key>never</Key></Deleted>")) {
		t.Errorf("delete of a missing key: %d %s", resp.StatusCode, rbody)
	}
	// CreateBucket: a malformed configuration fails, a valid one works.
	resp, rbody = e.do(t, rawRequest{method: http.MethodPut, path: "/" + uniqueBucket("badxml"), body: []byte("<CreateBucketConfiguration>")})
	expectError(t, resp, rbody, http.StatusBadRequest, "MalformedXML")
	conf := `<CreateBucketConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><LocationConstraint>us-east-1</LocationConstraint></CreateBucketConfiguration>`
	resp, rbody = e.do(t, rawRequest{method: http.MethodPut, path: "/" + uniqueBucket("goodxml"), body: []byte(conf)})
	if resp.StatusCode != 200 {
		t.Errorf("CreateBucket with configuration: %d %s", resp.StatusCode, rbody)
	}
}

func testBadBodies(t *testing.T, e *env, bucket string) {
	ctx := context.Background()
	mustBeMissing := func(key string) {
		t.Helper()
		if _, err := e.client.StatObject(ctx, bucket, key, minio.StatObjectOptions{}); minioCode(err) != "NoSuchKey" {
			t.Errorf("%s was stored (stat: %v)", key, err)
		}
	}
	// No Content-Length (chunked transfer, unsigned payload).
	req := e.buildRequest(t, rawRequest{method: http.MethodPut, path: "/" + bucket + "/nolength",
		header: http.Header{"X-Amz-Content-Sha256": {"UNSIGNED-PAYLOAD"}}, unsigned: true})
	req.Body, req.ContentLength = io.NopCloser(strings.NewReader("some data")), -1
	req = signer.SignV4(*req, testAccess, testSecret, "", testRegion)
	resp, body := roundTrip(t, req)
	expectError(t, resp, body, http.StatusLengthRequired, "MissingContentLength")
	mustBeMissing("nolength")

	// Metadata over 2 KiB.
	resp, body = e.do(t, rawRequest{method: http.MethodPut, path: "/" + bucket + "/bigmeta",
		header: http.Header{"X-Amz-Meta-Big": {strings.Repeat("m", 2100)}}, body: []byte("x")})
	expectError(t, resp, body, http.StatusBadRequest, "MetadataTooLarge")
	mustBeMissing("bigmeta")

	// Over 5 GiB declared: refused without reading the body.
	status, body := e.rawPut(t, bucket, "huge", 5<<30+1, 16<<10, false)
	if status != 400 || errorCode(t, body) != "EntityTooLarge" {
		t.Errorf("6 GiB put: %d %s", status, body)
	}
	// Shorter than Content-Length: the client half-closes early.
	for _, size := range []int64{4 << 10, 300 << 10} {
		key := fmt.Sprintf("short-%d", size)
		status, body = e.rawPut(t, bucket, key, size, size/2, true)
		t.Logf("short body of %d: %d %s", size, status, errorCode(t, body))
		if status != 400 || (size > 8<<10 && errorCode(t, body) != "IncompleteBody") {
			t.Errorf("short body of %d: %d %s", size, status, body)
		}
		mustBeMissing(key)
	}
	// A streaming (aws-chunked) body corrupted after signing: the chunk
	// signature fails, and an existing object is left as it was.
	e.put(t, bucket, "chunked", []byte("version one"), minio.PutObjectOptions{})
	data := randomBytes(200 << 10)
	req, err := http.NewRequest(http.MethodPut, "http://"+e.addr+"/"+bucket+"/chunked", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	req = signer.StreamingSignV4(req, testAccess, testSecret, "", testRegion, int64(len(data)), time.Now().UTC(), sha256Hasher{sha256.New()})
	req.Body = faultproxy.FlipBody(req.Body, 100<<10)
	resp, body = roundTrip(t, req)
	if resp.StatusCode < 400 {
		t.Errorf("corrupted aws-chunked put: %d %s", resp.StatusCode, body)
	}
	if got, err := e.get(t, bucket, "chunked", minio.GetObjectOptions{}); err != nil || string(got) != "version one" {
		t.Errorf("after failed put: %q, %v", got, err)
	}
}

// longKey is a valid key of exactly 1,024 bytes.
var longKey = strings.Repeat("kkkkkkk/", 127) + "kkkkkkkk"

// sha256Hasher adapts crypto/sha256 to the hasher minio-go's signer takes.
type sha256Hasher struct{ hash.Hash }

func (sha256Hasher) Close() {}

func roundTrip(t *testing.T, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, body
}

// rawPut sends a signed PUT declaring size bytes over a bare connection,
// writes only send of them, then (if halfClose) closes its write side,
// and returns the response status and body (0 if the server just closed).
func (e *env) rawPut(t *testing.T, bucket, key string, size, send int64, halfClose bool) (int, []byte) {
	t.Helper()
	conn, head := e.startRawPut(t, bucket, key, size)
	defer conn.Close()
	if _, err := conn.Write(head); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write(make([]byte, send)); err != nil {
		t.Fatal(err)
	}
	if halfClose {
		conn.(*net.TCPConn).CloseWrite()
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

func testUnsupported(t *testing.T, e *env, bucket string) {
	cases := []struct {
		method, path, query string
		status              int
		code                string
	}{
		{http.MethodGet, "/" + bucket, "website", 501, "NotImplemented"},
		{http.MethodGet, "/" + bucket, "policy", 501, "NotImplemented"},
		{http.MethodPut, "/" + bucket, "cors", 501, "NotImplemented"},
		{http.MethodGet, "/" + bucket, "lifecycle", 501, "NotImplemented"},
		{http.MethodPost, "/" + bucket + "/k", "restore", 501, "NotImplemented"},
		{http.MethodPut, "/" + bucket + "/k", "partNumber=1", 501, "NotImplemented"},
		{http.MethodGet, "/" + bucket + "/k", "retention", 501, "NotImplemented"},
		{http.MethodPost, "/" + bucket, "", 501, "NotImplemented"},
		{http.MethodPut, "/", "", 405, "MethodNotAllowed"},
		{http.MethodPost, "/" + bucket + "/k", "", 405, "MethodNotAllowed"},
		{http.MethodPatch, "/" + bucket + "/k", "", 405, "MethodNotAllowed"},
	}
	for _, c := range cases {
		resp, body := e.do(t, rawRequest{method: c.method, path: c.path, query: c.query})
		if resp.StatusCode != c.status || errorCode(t, body) != c.code {
			t.Errorf("%s %s?%s: %d %q, want %d %s", c.method, c.path, c.query, resp.StatusCode, errorCode(t, body), c.status, c.code)
		}
	}
	// GetBucketVersioning is answered: never enabled.
	resp, body := e.do(t, rawRequest{method: http.MethodGet, path: "/" + bucket, query: "versioning"})
	if resp.StatusCode != 200 || !bytes.Contains(body, []byte("VersioningConfiguration")) {
		t.Errorf("GetBucketVersioning: %d %s", resp.StatusCode, body)
	}
}

// treeOf lists every path under dir (relative), sorted.
func treeOf(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// assertContained checks that nothing appeared beside the origin's root
// and that the bucket holds only the objects the tests meant to store.
func assertContained(t *testing.T, e *env, before []string, bucket string) {
	t.Helper()
	rootName := filepath.Base(e.root)
	var outside []string
	for _, p := range treeOf(t, filepath.Dir(e.root)) {
		if p != rootName && !strings.HasPrefix(p, rootName+string(filepath.Separator)) && !slices.Contains(before, p) {
			outside = append(outside, p)
		}
	}
	if len(outside) > 0 {
		t.Errorf("created outside the origin root: %q", outside)
	}
	entries, err := os.ReadDir(filepath.Join(e.root, bucket))
	if err != nil {
		t.Fatal(err)
	}
	for _, de := range entries {
		if n := de.Name(); n != strings.Split(longKey, "/")[0] && n != "chunked" {
			t.Errorf("unexpected entry %q in the bucket directory", n)
		}
	}
}

// TestProtocolErrors covers requests fasthttp rejects before entry (an
// oversized header block) and PUTs that wait for 100-continue.
func TestProtocolErrors(t *testing.T) {
	e := newEnv(t, backends[0])
	bucket := e.makeBucket(t, "proto")
	// The server answers and closes while the client may still be
	// sending the header block; the kernel may then reset the connection
	// before the client reads the answer, or fail the client's write
	// (EPIPE). A few attempts must see it.
	var resp *http.Response
	var body []byte
	for attempt := 0; attempt < 5 && resp == nil; attempt++ {
		req := e.buildRequest(t, rawRequest{method: http.MethodGet, path: "/" + bucket + "/k",
			header: http.Header{"X-Filler": {strings.Repeat("f", 20<<10)}}})
		r, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			if !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.EPIPE) {
				t.Fatal(err)
			}
			continue
		}
		body, err = io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		resp = r
	}
	if resp == nil {
		t.Fatal("every oversized-header request was reset before its answer")
	}
	expectError(t, resp, body, http.StatusBadRequest, "RequestHeaderSectionTooLarge")

	// boto3 and the aws cli send Expect: 100-continue with every PUT.
	req := e.buildRequest(t, rawRequest{method: http.MethodPut, path: "/" + bucket + "/continued",
		body: []byte("after continue"), header: http.Header{"Expect": {"100-continue"}}})
	tr := &http.Transport{ExpectContinueTimeout: 5 * time.Second}
	defer tr.CloseIdleConnections()
	r, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != 200 {
		t.Fatalf("PUT with Expect: 100-continue: %d", r.StatusCode)
	}
	if got, err := e.get(t, bucket, "continued", minio.GetObjectOptions{}); err != nil || string(got) != "after continue" {
		t.Errorf("continued object: %q, %v", got, err)
	}
}
