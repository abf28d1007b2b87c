// The GET lane over real connections: what it answers is what fasthttp's
// path answers for the same request, a connection it hands off goes on
// under fasthttp, pipelined requests are answered in order, heads it
// does not take are fasthttp's, and a shutdown closes its idle
// connections.
package api

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
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
// as connections leave it).
func awaitTaken(t *testing.T, e *env, want int64) {
	t.Helper()
	l := e.srv.lane.Load()
	deadline := time.Now().Add(30 * time.Second)
	for l.taken.Load() != want {
		if time.Now().After(deadline) {
			t.Fatalf("the lane answered %d requests; want %d", l.taken.Load(), want)
		}
		time.Sleep(5 * time.Millisecond) // polling interval, not a wait for an event
	}
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

// TestLaneAnswersAsFasthttp: each GET the lane takes (a small object, one
// sent from the RAM tier's file, one of several chunks, a missing key, a
// bad signature) gets the answer fasthttp's path gives the same request,
// sent with a field the lane does not know.
func TestLaneAnswersAsFasthttp(t *testing.T) {
	e := newEnv(t, backends[0])
	bucket := e.makeBucket(t, "lane")
	sizes := map[string]int{"small": 4 << 10, "file": 100 << 10, "chunks": 9 << 20}
	for name, n := range sizes {
		e.put(t, bucket, name, bytes.Repeat([]byte(name[:1]), n), minio.PutObjectOptions{
			ContentType: "text/x-" + name, UserMetadata: map[string]string{"origin": name}})
	}
	cases := []rawRequest{
		{method: http.MethodGet, path: "/" + bucket + "/small"},
		{method: http.MethodGet, path: "/" + bucket + "/file"},
		{method: http.MethodGet, path: "/" + bucket + "/chunks"},
		{method: http.MethodGet, path: "/" + bucket + "/missing"},
		{method: http.MethodGet, path: "/" + bucket + "/small", secret: "not-the-secret"},
	}
	var taken int64
	for i, rr := range cases {
		for range 2 { // the first read warms the object: compare the second
			c, br := laneConnTo(t, e)
			lane, lbody := exchange(t, c, br, e.buildRequest(t, rr))
			c.Close()
			taken++
			awaitTaken(t, e, taken)
			req := e.buildRequest(t, rr)
			req.Header.Set("X-Lane-Test", "fasthttp's") // unsigned, and not the lane's
			c, br = laneConnTo(t, e)
			fast, fbody := exchange(t, c, br, req)
			c.Close()
			sameAnswer(t, rr.path, lane, fast, lbody, fbody)
			if i < 3 && (lane.StatusCode != http.StatusOK || len(lbody) != sizes[rr.path[strings.LastIndexByte(rr.path, '/')+1:]]) {
				t.Errorf("%s: %d, %d bytes", rr.path, lane.StatusCode, len(lbody))
			}
		}
	}
	awaitTaken(t, e, taken) // none of fasthttp's requests was the lane's
}

// TestLaneHandsOffMidConnection: a connection whose second request is not
// the lane's (a ranged GET) is fasthttp's from then on, with nothing lost
// between the two.
func TestLaneHandsOffMidConnection(t *testing.T) {
	e := newEnv(t, backends[0])
	bucket := e.makeBucket(t, "handoff")
	data := []byte("0123456789abcdef")
	e.put(t, bucket, "k", data, minio.PutObjectOptions{})
	c, br := laneConnTo(t, e)
	get := rawRequest{method: http.MethodGet, path: "/" + bucket + "/k"}
	ranged := get
	ranged.header = http.Header{"Range": {"bytes=2-5"}}
	for i, rr := range []rawRequest{get, ranged, get} {
		resp, body := exchange(t, c, br, e.buildRequest(t, rr))
		want := data
		if rr.header != nil {
			want = data[2:6]
		}
		if resp.StatusCode/100 != 2 || !bytes.Equal(body, want) {
			t.Fatalf("request %d: %d %q; want %q", i, resp.StatusCode, body, want)
		}
	}
	c.Close()
	awaitTaken(t, e, 1)
}

// TestLanePipelined: requests sent together, before any answer, are
// answered in order, the lane's and then fasthttp's.
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
	c.Close()
	awaitTaken(t, e, 2)
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
