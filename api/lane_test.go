// The GET lane over real connections: what it answers is what fasthttp's
// path answers for the same request, a connection it hands off goes on
// under fasthttp, pipelined requests are answered in order, heads it
// does not take are fasthttp's, a shutdown closes its idle connections,
// and the GETs real clients send are the lane's.
package api

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/granary-dev/granary/access"
)

// laneConnTo dials e; the connection is closed when the test ends.
func laneConnTo(t *testing.T, e *env) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(time.Minute))
	return c, bufio.NewReader(c)
}

// exchange writes req on c and reads the answer, its body whole.
func exchange(t *testing.T, c net.Conn, br *bufio.Reader, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	if err := req.Write(c); err != nil {
		t.Fatal(err)
	}
	return readAnswer(t, br, req.Method)
}

// readAnswer reads one answer from br, its body whole.
func readAnswer(t *testing.T, br *bufio.Reader, method string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

// awaitTaken waits until e's lane has counted want requests (it counts
// each once its answer is written).
func awaitTaken(t *testing.T, e *env, want int64) {
	t.Helper()
	taken := func() int64 { return int64(testutil.ToFloat64(e.srv.metrics.laneGets)) }
	deadline := time.Now().Add(30 * time.Second)
	for taken() != want {
		if time.Now().After(deadline) {
			t.Fatalf("the lane answered %d requests; want %d", taken(), want)
		}
		time.Sleep(5 * time.Millisecond) // polling interval, not a wait for an event
	}
}

// bothWays sends rr to the lane on a connection of its own, waits until
// the lane has answered taken requests, sends rr again with a field the
// lane does not know (fasthttp's to answer, as a field outside the
// signature), and fails unless the two answers are the same. It returns
// the lane's.
func bothWays(t *testing.T, e *env, rr rawRequest, taken int64) (*http.Response, []byte) {
	t.Helper()
	c, br := laneConnTo(t, e)
	lane, lbody := exchange(t, c, br, e.buildRequest(t, rr))
	c.Close()
	awaitTaken(t, e, taken)
	req := e.buildRequest(t, rr)
	req.Header.Set("X-Lane-Test", "fasthttp's")
	c, br = laneConnTo(t, e)
	fast, fbody := exchange(t, c, br, req)
	c.Close()
	sameAnswer(t, rr.host+rr.path, lane, fast, lbody, fbody)
	return lane, lbody
}

// sameAnswer fails unless a and b are the same answer but for the
// request's id and the date.
func sameAnswer(t *testing.T, what string, a, b *http.Response, abody, bbody []byte) {
	t.Helper()
	norm := func(r *http.Response, body []byte) (http.Header, []byte) {
		h := r.Header.Clone()
		id := h.Get("X-Amz-Request-Id")
		for _, k := range []string{"Date", "X-Amz-Request-Id", "X-Amz-Id-2"} {
			h.Del(k)
		}
		if id != "" {
			body = bytes.ReplaceAll(body, []byte(id), []byte("ID"))
		}
		return h, body
	}
	ah, ab := norm(a, abody)
	bh, bb := norm(b, bbody)
	if a.StatusCode != b.StatusCode || !sameHeader(ah, bh) || !bytes.Equal(ab, bb) {
		t.Errorf("%s: the lane answered %d %v (%d bytes), fasthttp %d %v (%d bytes)",
			what, a.StatusCode, ah, len(ab), b.StatusCode, bh, len(bb))
	}
}

func sameHeader(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

// TestLaneAnswersAsFasthttp: each GET and HEAD the lane takes (a small
// object, one sent from the RAM tier's file, one of several chunks,
// ranges of them, conditions that hold and that fail, a missing key, a
// bad signature, presigned URLs, an SDK's x-id, no signature, escapes in
// the path) gets the answer fasthttp's path gives the same request, sent
// with a field the lane does not know.
func TestLaneAnswersAsFasthttp(t *testing.T) {
	e := newEnv(t, backends[0])
	bucket := e.makeBucket(t, "lane")
	sizes := map[string]int{"small": 4 << 10, "file": 100 << 10, "chunks": 9 << 20}
	etag := map[string]string{}
	for name, n := range sizes {
		etag[name] = `"` + e.put(t, bucket, name, bytes.Repeat([]byte(name[:1]), n), minio.PutObjectOptions{
			ContentType: "text/x-" + name, UserMetadata: map[string]string{"origin": name}}).ETag + `"`
	}
	get := func(name string, fields ...string) rawRequest {
		rr := rawRequest{method: http.MethodGet, path: "/" + bucket + "/" + name, header: http.Header{}}
		for i := 0; i < len(fields); i += 2 {
			rr.header.Set(fields[i], fields[i+1])
		}
		return rr
	}
	head := func(name string, fields ...string) rawRequest {
		rr := get(name, fields...)
		rr.method = http.MethodHead
		return rr
	}
	e.put(t, bucket, "date=2024/part 0", []byte("a partition"), minio.PutObjectOptions{})
	future := time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)
	cases := []struct {
		rr     rawRequest
		status int
	}{
		{get("small"), http.StatusOK},
		{get("file"), http.StatusOK},
		{get("chunks"), http.StatusOK},
		{get("small", "Range", "bytes=100-1099"), http.StatusPartialContent},
		{get("file", "Range", "bytes=-300"), http.StatusPartialContent},
		{get("chunks", "Range", "bytes=8388000-", "If-Match", etag["chunks"]), http.StatusPartialContent},
		{get("small", "Range", "bytes=9000-"), http.StatusRequestedRangeNotSatisfiable},
		{get("small", "If-None-Match", etag["small"]), http.StatusNotModified},
		{get("file", "If-Match", `"0123"`), http.StatusPreconditionFailed},
		{get("small", "If-Modified-Since", future), http.StatusNotModified},
		{get("small", "If-Unmodified-Since", future, "If-None-Match", `"0123"`), http.StatusOK},
		{get("missing"), http.StatusNotFound},
		{head("file"), http.StatusOK},
		{head("chunks", "Range", "bytes=10-"), http.StatusPartialContent},
		{head("small", "Range", "bytes=9000-"), http.StatusRequestedRangeNotSatisfiable},
		{head("small", "If-None-Match", etag["small"]), http.StatusNotModified},
		{head("missing"), http.StatusNotFound},
		{rawRequest{method: http.MethodGet, path: "/" + bucket + "/small", secret: "not-the-secret"}, http.StatusForbidden},
		{presigned(get("file")), http.StatusOK},
		{presigned(get("small", "Range", "bytes=10-99")), http.StatusPartialContent},
		{presigned(head("chunks")), http.StatusOK},
		{presigned(rawRequest{method: http.MethodGet, path: "/" + bucket + "/small", secret: "not-the-secret"}), http.StatusForbidden},
		{rawRequest{method: http.MethodGet, path: "/" + bucket + "/small", query: "x-id=GetObject"}, http.StatusOK},
		{rawRequest{method: http.MethodGet, path: "/" + bucket + "/small", unsigned: true}, http.StatusForbidden},
		{rawRequest{method: http.MethodGet, path: "/" + bucket + "/date%3D2024/part%200"}, http.StatusOK},
		{rawRequest{method: http.MethodHead, path: "/" + bucket + "%2Fdate=2024%2Fpart%200"}, http.StatusOK},
	}
	var taken int64
	for _, tc := range cases {
		rr := tc.rr
		for range 2 { // the first read warms the object: compare the second
			taken++
			lane, lbody := bothWays(t, e, rr, taken)
			if lane.StatusCode != tc.status {
				t.Errorf("%s %v: %d, want %d", rr.path, rr.header, lane.StatusCode, tc.status)
			}
			if n, sized := sizes[rr.path[strings.LastIndexByte(rr.path, '/')+1:]]; sized && tc.status == http.StatusOK && rr.method == http.MethodGet && len(lbody) != n {
				t.Errorf("%s: %d bytes, want %d", rr.path, len(lbody), n)
			}
		}
	}
	awaitTaken(t, e, taken) // none of fasthttp's requests was the lane's
}

// TestLaneAnonymousReads: unsigned GETs and HEADs of objects the
// anonymous policy lets anyone read are the lane's, answered as fasthttp
// answers them; one of an object it does not open is refused alike.
func TestLaneAnonymousReads(t *testing.T) {
	pub := uniqueBucket("lanepub")
	anon := access.NewPolicy([]access.Grant{{Bucket: pub, Actions: access.Read}})
	e := newEnv(t, backends[0], func(o *nodeOptions) { o.Access = access.NewRegistry(testAccess, testSecret, anon) })
	if err := e.client.MakeBucket(t.Context(), pub, minio.MakeBucketOptions{Region: testRegion}); err != nil {
		t.Fatal(err)
	}
	priv := e.makeBucket(t, "lanepriv")
	data := bytes.Repeat([]byte("a"), 100<<10)
	e.put(t, pub, "k", data, minio.PutObjectOptions{})
	e.put(t, priv, "k", data, minio.PutObjectOptions{})
	cases := []struct {
		rr     rawRequest
		status int
	}{
		{rawRequest{method: http.MethodGet, path: "/" + pub + "/k", unsigned: true}, http.StatusOK},
		{rawRequest{method: http.MethodGet, path: "/" + pub + "/k", unsigned: true, header: http.Header{"Range": {"bytes=5-99"}}}, http.StatusPartialContent},
		{rawRequest{method: http.MethodHead, path: "/" + pub + "/k", unsigned: true}, http.StatusOK},
		{rawRequest{method: http.MethodGet, path: "/" + pub + "/missing", unsigned: true}, http.StatusNotFound},
		{rawRequest{method: http.MethodGet, path: "/" + priv + "/k", unsigned: true}, http.StatusForbidden},
	}
	for i, tc := range cases {
		lane, _ := bothWays(t, e, tc.rr, int64(i+1))
		if lane.StatusCode != tc.status {
			t.Errorf("%s %s %v: %d, want %d", tc.rr.method, tc.rr.path, tc.rr.header, lane.StatusCode, tc.status)
		}
	}
	awaitTaken(t, e, int64(len(cases)))
}

// TestLaneVirtualHost: GETs and HEADs that name their bucket in the host
// (under one of the node's domains, in any case) are the lane's, and
// answered as fasthttp answers them.
func TestLaneVirtualHost(t *testing.T) {
	const domain = "s3.granary.test"
	e := newEnv(t, backends[0], func(o *nodeOptions) { o.Domains = []string{domain} })
	bucket := e.makeBucket(t, "lanevhost")
	data := []byte("named by the host")
	e.put(t, bucket, "a/k", data, minio.PutObjectOptions{})
	_, port, _ := net.SplitHostPort(e.addr)
	cases := []struct {
		rr     rawRequest
		status int
	}{
		{rawRequest{method: http.MethodGet, path: "/a/k", host: bucket + "." + domain + ":" + port}, http.StatusOK},
		{rawRequest{method: http.MethodHead, path: "/a/k", host: strings.ToUpper(bucket + "." + domain)}, http.StatusOK},
		{rawRequest{method: http.MethodGet, path: "/a/k", host: bucket + "." + domain, header: http.Header{"Range": {"bytes=6-"}}}, http.StatusPartialContent},
		{presigned(rawRequest{method: http.MethodGet, path: "/a/k", host: bucket + "." + domain}), http.StatusOK},
		{rawRequest{method: http.MethodGet, path: "/missing", host: bucket + "." + domain}, http.StatusNotFound},
	}
	for i, tc := range cases {
		lane, lbody := bothWays(t, e, tc.rr, int64(i+1))
		if lane.StatusCode != tc.status || (tc.status == http.StatusOK && tc.rr.method == http.MethodGet && !bytes.Equal(lbody, data)) {
			t.Errorf("%s %s%s: %d %q, want %d", tc.rr.method, tc.rr.host, tc.rr.path, lane.StatusCode, lbody, tc.status)
		}
	}
	awaitTaken(t, e, int64(len(cases)))
}

// presigned is rr signed in its query.
func presigned(rr rawRequest) rawRequest {
	rr.presign = true
	return rr
}

// TestLaneHandsOffMidConnection: a connection whose second request is not
// the lane's (a GET with a query) is fasthttp's from then on, with
// nothing lost between the two.
func TestLaneHandsOffMidConnection(t *testing.T) {
	e := newEnv(t, backends[0])
	bucket := e.makeBucket(t, "handoff")
	data := []byte("0123456789abcdef")
	e.put(t, bucket, "k", data, minio.PutObjectOptions{})
	c, br := laneConnTo(t, e)
	get := rawRequest{method: http.MethodGet, path: "/" + bucket + "/k"}
	typed := get
	typed.query = "response-content-type=text%2Fplain"
	for i, rr := range []rawRequest{get, typed, get} {
		resp, body := exchange(t, c, br, e.buildRequest(t, rr))
		if resp.StatusCode != http.StatusOK || !bytes.Equal(body, data) {
			t.Fatalf("request %d: %d %q; want %q", i, resp.StatusCode, body, data)
		}
		if want := rr.query != ""; want != (resp.Header.Get("Content-Type") == "text/plain") {
			t.Fatalf("request %d: Content-Type %q", i, resp.Header.Get("Content-Type"))
		}
	}
	c.Close()
	awaitTaken(t, e, 1)
}

// TestLaneTakesBackAfterList: a connection that lists, or asks for a
// bucket's head, comes back to the lane for the GETs after it, one sent
// with the listing before its answer too; one whose GET fasthttp
// answered (a query) stays with fasthttp.
func TestLaneTakesBackAfterList(t *testing.T) {
	e := newEnv(t, backends[0])
	bucket := e.makeBucket(t, "back")
	data := []byte("read after listing")
	e.put(t, bucket, "k", data, minio.PutObjectOptions{})
	get := rawRequest{method: http.MethodGet, path: "/" + bucket + "/k"}
	list := rawRequest{method: http.MethodGet, path: "/" + bucket, query: "list-type=2"}
	headBucket := rawRequest{method: http.MethodHead, path: "/" + bucket}
	typed := get
	typed.query = "response-content-type=text%2Fplain"
	c, br := laneConnTo(t, e)
	check := func(what string, resp *http.Response, body []byte, want []byte) {
		t.Helper()
		if resp.StatusCode != http.StatusOK || (want != nil && !bytes.Equal(body, want)) {
			t.Fatalf("%s: %d %q", what, resp.StatusCode, body)
		}
	}
	taken := int64(0)
	for _, before := range []rawRequest{list, headBucket} {
		resp, body := exchange(t, c, br, e.buildRequest(t, before))
		check(before.method+" "+before.path+"?"+before.query, resp, body, nil)
		resp, body = exchange(t, c, br, e.buildRequest(t, get))
		check("GET after it", resp, body, data)
		taken++
		awaitTaken(t, e, taken)
	}
	var wire bytes.Buffer // a listing and a GET sent together
	for _, rr := range []rawRequest{list, get} {
		if err := e.buildRequest(t, rr).Write(&wire); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Write(wire.Bytes()); err != nil {
		t.Fatal(err)
	}
	resp, body := readAnswer(t, br, http.MethodGet)
	if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte("<Key>k</Key>")) {
		t.Fatalf("pipelined listing: %d %q", resp.StatusCode, body)
	}
	resp, body = readAnswer(t, br, http.MethodGet)
	check("GET pipelined after the listing", resp, body, data)
	taken++
	awaitTaken(t, e, taken)
	for _, rr := range []rawRequest{typed, get} { // fasthttp's from the typed GET on
		resp, body := exchange(t, c, br, e.buildRequest(t, rr))
		check("GET "+rr.query, resp, body, data)
	}
	c.Close()
	// A GET the lane takes on a connection of its own: the count then
	// says whether it took the last one above as well.
	c, br = laneConnTo(t, e)
	resp, body = exchange(t, c, br, e.buildRequest(t, get))
	check("GET on a new connection", resp, body, data)
	awaitTaken(t, e, taken+1)
}

// TestLaneTakesBackMoreThanAHead: a listing sent together with a PUT
// whose body is larger than the lane's buffer: the connection comes back
// to the lane with what fasthttp read ahead, goes to fasthttp again at
// the PUT with what the lane read of it, and the PUT lands whole.
func TestLaneTakesBackMoreThanAHead(t *testing.T) {
	e := newEnv(t, backends[0])
	bucket := e.makeBucket(t, "backfull")
	data := bytes.Repeat([]byte("p"), 2*headerBufferSize)
	var wire bytes.Buffer
	list := rawRequest{method: http.MethodGet, path: "/" + bucket, query: "list-type=2"}
	put := rawRequest{method: http.MethodPut, path: "/" + bucket + "/big", body: data}
	for _, rr := range []rawRequest{list, put} {
		if err := e.buildRequest(t, rr).Write(&wire); err != nil {
			t.Fatal(err)
		}
	}
	c, br := laneConnTo(t, e)
	if _, err := c.Write(wire.Bytes()); err != nil {
		t.Fatal(err)
	}
	for _, what := range []string{"listing", "PUT"} {
		if resp, body := readAnswer(t, br, http.MethodGet); resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %q", what, resp.StatusCode, body)
		}
	}
	resp, body := exchange(t, c, br, e.buildRequest(t, rawRequest{method: http.MethodGet, path: "/" + bucket + "/big"}))
	if resp.StatusCode != http.StatusOK || !bytes.Equal(body, data) {
		t.Fatalf("GET after the PUT: %d, %d bytes; want %d", resp.StatusCode, len(body), len(data))
	}
}

// TestLaneTakesBackThenShutdown: connections that fasthttp hands back to
// the lane after a bucket's HEAD and the lane hands to fasthttp again at
// once, at the next request, end in fasthttp's hands and still close at
// a shutdown. fasthttp ends its serve of a hijacked connection after the
// lane has it, now and then (a few times in a hundred here) after the
// lane has read the next request; had the lane handed the connection
// back before that, fasthttp would lose track of its new serve and the
// shutdown would wait on it to its deadline.
func TestLaneTakesBackThenShutdown(t *testing.T) {
	e := newEnv(t, backends[0], func(o *nodeOptions) { o.IdleTimeout = time.Hour })
	bucket := e.makeBucket(t, "backshut")
	ctx := context.Background()
	for range 100 { // each client's connection left open, with fasthttp
		cl := e.newClient(t, &http.Transport{})
		for range 2 {
			if ok, err := cl.BucketExists(ctx, uniqueBucket("missing")); ok || err != nil {
				t.Fatalf("BucketExists(missing) = %v, %v", ok, err)
			}
			if _, err := cl.GetBucketVersioning(ctx, bucket); err != nil {
				t.Fatal(err)
			}
		}
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := e.srv.Shutdown(sctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
}

// TestLanePipelined: requests sent together, before any answer, are
// answered in order, the lane's and then fasthttp's (a GET with a query).
func TestLanePipelined(t *testing.T) {
	e := newEnv(t, backends[0])
	bucket := e.makeBucket(t, "pipelined")
	for _, k := range []string{"a", "b"} {
		e.put(t, bucket, k, []byte("body of "+k), minio.PutObjectOptions{})
	}
	var wire bytes.Buffer
	for _, k := range []string{"a", "b"} {
		if err := e.buildRequest(t, rawRequest{method: http.MethodGet, path: "/" + bucket + "/" + k}).Write(&wire); err != nil {
			t.Fatal(err)
		}
	}
	head := e.buildRequest(t, rawRequest{method: http.MethodHead, path: "/" + bucket + "/a"})
	if err := head.Write(&wire); err != nil {
		t.Fatal(err)
	}
	typed := e.buildRequest(t, rawRequest{method: http.MethodGet, path: "/" + bucket + "/b", query: "response-content-type=text%2Fplain"})
	if err := typed.Write(&wire); err != nil {
		t.Fatal(err)
	}
	c, br := laneConnTo(t, e)
	if _, err := c.Write(wire.Bytes()); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b"} {
		resp, body := readAnswer(t, br, http.MethodGet)
		if resp.StatusCode != http.StatusOK || string(body) != "body of "+k {
			t.Fatalf("GET %s: %d %q", k, resp.StatusCode, body)
		}
	}
	if resp, _ := readAnswer(t, br, http.MethodHead); resp.StatusCode != http.StatusOK || resp.ContentLength != int64(len("body of a")) {
		t.Fatalf("HEAD: %d, length %d", resp.StatusCode, resp.ContentLength)
	}
	if resp, body := readAnswer(t, br, http.MethodGet); resp.StatusCode != http.StatusOK || string(body) != "body of b" ||
		resp.Header.Get("Content-Type") != "text/plain" {
		t.Fatalf("GET b as text: %d %q, %q", resp.StatusCode, body, resp.Header.Get("Content-Type"))
	}
	c.Close()
	awaitTaken(t, e, 3)
}

// TestLaneLeavesOddHeads: a head whose lines end in bare LFs, or that
// fills the read buffer without ending, is fasthttp's to answer.
func TestLaneLeavesOddHeads(t *testing.T) {
	e := newEnv(t, backends[0])
	for name, head := range map[string]string{
		"bare LF":  "GET /healthz HTTP/1.1\nHost: x\n\n",
		"too long": "GET /b/k HTTP/1.1\r\nHost: x\r\nX-Pad: " + strings.Repeat("p", headerBufferSize) + "\r\n\r\n",
	} {
		c, br := laneConnTo(t, e)
		if _, err := io.WriteString(c, head); err != nil && name != "too long" {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%s: no answer: %v", name, err)
		}
		resp.Body.Close()
		if name == "too long" && resp.StatusCode != http.StatusBadRequest && resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("%s: %d", name, resp.StatusCode)
		}
		c.Close()
	}
	awaitTaken(t, e, 0)
}

// TestLaneShutdownClosesIdle: a shutdown closes a kept-alive connection
// the lane holds idle at once, well before its deadline.
func TestLaneShutdownClosesIdle(t *testing.T) {
	e := newEnv(t, backends[0], func(o *nodeOptions) { o.IdleTimeout = time.Hour })
	bucket := e.makeBucket(t, "shutdown")
	e.put(t, bucket, "k", []byte("v"), minio.PutObjectOptions{})
	c, br := laneConnTo(t, e)
	if resp, _ := exchange(t, c, br, e.buildRequest(t, rawRequest{method: http.MethodGet, path: "/" + bucket + "/k"})); resp.StatusCode != http.StatusOK {
		t.Fatalf("GET: %d", resp.StatusCode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.srv.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatal("the shutdown waited for the idle connection")
	}
	if n, err := br.Read(make([]byte, 1)); err == nil {
		t.Fatalf("the idle connection is open after the shutdown (read %d bytes)", n)
	}
}

// boto3GetsScript lists a prefix and reads one object n times with boto3
// as a data loader would, its defaults kept (it asks for checksums), then
// n times more through a URL boto3 presigned (SigV2, its default for
// presigning), and checks each body:
// endpoint, key, secret, bucket, object key, n, the body's byte, its size.
const boto3GetsScript = `
import sys, boto3, urllib3
from botocore.config import Config
endpoint, key, secret, bucket, name, n, byte, size = sys.argv[1:9]
s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
    aws_access_key_id=key, aws_secret_access_key=secret,
    config=Config(retries={"max_attempts": 1, "mode": "standard"}, s3={"addressing_style": "path"}))
assert s3.list_objects_v2(Bucket=bucket, Prefix=name)["KeyCount"] == 1
for _ in range(int(n)):
    body = s3.get_object(Bucket=bucket, Key=name)["Body"].read()
    assert body == byte.encode() * int(size), len(body)
url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": name}, ExpiresIn=3600)
pool = urllib3.PoolManager(retries=False)
for _ in range(int(n)):
    r = pool.request("GET", url)
    assert r.status == 200 and r.data == byte.encode() * int(size), (r.status, len(r.data))
print("ok")
`

// TestLaneTakesClientGETs: the plain GETs boto3 and minio-go send, with
// their default settings, are the lane's, after a listing on the same
// connection too, and so are GETs of the URLs each presigns.
func TestLaneTakesClientGETs(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 not found (make deps installs it)")
	}
	e := newEnv(t, backends[0])
	bucket := e.makeBucket(t, "clients")
	const size = 100 << 10
	data := bytes.Repeat([]byte("c"), size)
	e.put(t, bucket, "k", data, minio.PutObjectOptions{})
	out, err := exec.Command(py, "-c", boto3GetsScript, "http://"+e.addr, testAccess, testSecret,
		bucket, "k", "3", "c", strconv.Itoa(size)).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("boto3: %v\n%s", err, out)
	}
	awaitTaken(t, e, 6)
	// A client of its own: e.client's connections went to fasthttp with
	// the bucket's creation and the PUT.
	c, err := minio.New(e.addr, &minio.Options{Creds: credentials.NewStaticV4(testAccess, testSecret, ""), Region: testRegion})
	if err != nil {
		t.Fatal(err)
	}
	for info := range c.ListObjects(t.Context(), bucket, minio.ListObjectsOptions{}) {
		if info.Err != nil {
			t.Fatal(info.Err)
		}
	}
	for range 3 {
		obj, err := c.GetObject(t.Context(), bucket, "k", minio.GetObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(obj)
		obj.Close()
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("minio-go: %d bytes, %v", len(got), err)
		}
	}
	u, err := c.PresignedGetObject(t.Context(), bucket, "k", time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 { // a presigned URL (SigV4), read with Go's own client
		resp, err := http.Get(u.String())
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || err != nil || !bytes.Equal(got, data) {
			t.Fatalf("presigned GET: %d, %d bytes, %v", resp.StatusCode, len(got), err)
		}
	}
	awaitTaken(t, e, 12)
}

// TestLaneHeadsInPieces: a head that arrives a few bytes at a time is
// answered once whole, and a later head trickled a byte a second is cut
// at the header timeout, counted from its first bytes: the waits between
// its pieces do not move the deadline on.
func TestLaneHeadsInPieces(t *testing.T) {
	e := newEnv(t, backends[0], func(o *nodeOptions) {
		o.ReadHeaderTimeout = 2 * time.Second
		o.IdleTimeout = time.Minute
	})
	bucket := e.makeBucket(t, "pieces")
	data := []byte("pieced together")
	e.put(t, bucket, "k", data, minio.PutObjectOptions{})
	c, br := laneConnTo(t, e)
	var wire bytes.Buffer
	if err := e.buildRequest(t, rawRequest{method: http.MethodGet, path: "/" + bucket + "/k"}).Write(&wire); err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{wire.Len(), 7} { // whole, then in pieces of 7 bytes
		for rest := wire.Bytes(); len(rest) > 0; rest = rest[min(size, len(rest)):] {
			if _, err := c.Write(rest[:min(size, len(rest))]); err != nil {
				t.Fatal(err)
			}
		}
		if resp, body := readAnswer(t, br, http.MethodGet); resp.StatusCode != http.StatusOK || !bytes.Equal(body, data) {
			t.Fatalf("GET in pieces of %d: %d %q", size, resp.StatusCode, body)
		}
	}
	stop := make(chan struct{})
	defer close(stop)
	go trickle(c, stop, "GET /"+bucket+"/k HTTP/1.1\r\nHost: x\r\nX-Pad: ")
	resp, body := readAnswer(t, br, http.MethodGet)
	if resp.StatusCode != http.StatusBadRequest || errorCode(t, body) != "RequestTimeout" || !resp.Close {
		t.Fatalf("trickled head: %d %q close=%v; want 400 RequestTimeout and the connection closed", resp.StatusCode, body, resp.Close)
	}
	awaitTaken(t, e, 2)
}

// TestLaneQuery: the queries the lane takes (none, a presigned URL's,
// x-id=GetObject on a GET) and the ones it leaves to fasthttp.
func TestLaneQuery(t *testing.T) {
	v4 := "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AK%2F20261203%2Fus-east-1%2Fs3%2Faws4_request" +
		"&X-Amz-Date=20261203T000000Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Signature=ab12"
	v2 := "AWSAccessKeyId=AK&Signature=0OJ%2Biz5%3D&Expires=1796309114"
	for _, tc := range []struct {
		method, query   string
		takes, presigns bool
	}{
		{mGET, "", true, false},
		{mGET, v4, true, true},
		{mHEAD, v4, true, true},
		{mGET, v2, true, true},
		{mGET, "x-id=GetObject", true, false},
		{mGET, "x-id=GetObject&" + v4, true, true},
		{mHEAD, "x-id=GetObject", false, false},
		{mGET, "x-id=PutObject", false, false},
		{mGET, "x-id=GetObject&x-id=GetObject", false, false},
		{mGET, v4 + "&X-Amz-Signature=cd34", false, false},
		{mGET, v4 + "&response-content-type=text%2Fplain", false, false},
		{mGET, "versionId=3", false, false},
		{mGET, "X-Amz-Security-Token=t&" + v4, false, false},
		{mGET, "x-id=Get Object", false, false},
		{mGET, "x-id=GetObject#frag", false, false},
		{mGET, "Signature", false, false},
	} {
		lc := &laneConn{method: tc.method}
		if got := lc.laneQuery([]byte(tc.query)); got != tc.takes || (got && lc.presigned != tc.presigns) {
			t.Errorf("%s ?%s: takes %v, presigned %v; want %v, %v", tc.method, tc.query, got, lc.presigned, tc.takes, tc.presigns)
		}
	}
}
