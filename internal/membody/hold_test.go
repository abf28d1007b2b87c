// A Conn holds a response's head for its body: fasthttp serving a real
// connection sends head and body in one WriteBuffers, and a response
// whose body is not written (a HEAD, a body replaced) still leaves.
package membody

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// recConn is a Conn over a net.Conn that records how each send left:
// "write" for a plain Write, "writev" for a WriteBuffers.
type recConn struct {
	net.Conn
	mu    sync.Mutex
	sends []string
	hold  bool
	held  []byte
}

func (c *recConn) note(s string) {
	c.mu.Lock()
	c.sends = append(c.sends, s)
	c.mu.Unlock()
}

func (c *recConn) Write(p []byte) (int, error) {
	if c.hold {
		c.held = append(c.held, p...)
		return len(p), nil
	}
	c.note("write")
	return c.Conn.Write(p)
}

func (c *recConn) Hold() { c.hold = true }

func (c *recConn) Held() bool { return c.hold && len(c.held) > 0 }

func (c *recConn) Release() error {
	head := c.held
	c.hold, c.held = false, nil
	if len(head) == 0 {
		return nil
	}
	c.note("write")
	_, err := c.Conn.Write(head)
	return err
}

func (c *recConn) WriteBuffers(v *net.Buffers) (int64, error) {
	head := c.held
	c.hold, c.held = false, nil
	var n int64
	for _, b := range *v {
		n += int64(len(b))
	}
	all := append(net.Buffers{head}, *v...)
	c.note("writev")
	_, err := all.WriteTo(c.Conn)
	return n, err
}

func (c *recConn) log() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.sends...)
}

// serveOne serves one request (method) on a fresh connection with
// handler and returns the client's response, its body and the sends.
func serveOne(t *testing.T, method string, handler fasthttp.RequestHandler) (*http.Response, []byte, []string) {
	t.Helper()
	client, server := net.Pipe()
	rc := &recConn{Conn: server}
	done := make(chan error, 1)
	go func() { done <- fasthttp.ServeConn(rc, handler) }()
	client.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(client, method+" /x HTTP/1.1\r\nHost: h\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(client), &http.Request{Method: method})
	if err != nil {
		t.Fatalf("%s: no response: %v", method, err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s: body: %v", method, err)
	}
	client.Close()
	<-done
	return resp, body, rc.log()
}

func TestHeadLeavesWithTheBody(t *testing.T) {
	sample := bytes.Repeat([]byte("0123456789abcdef"), 100<<10/16)
	set := func(c *fasthttp.RequestCtx) { Set(&c.Response, sample, c.Conn()) }
	resp, body, sends := serveOne(t, "GET", set)
	if resp.StatusCode != 200 || !bytes.Equal(body, sample) {
		t.Fatalf("GET: status %d, %d bytes, want 200 and the %d-byte sample", resp.StatusCode, len(body), len(sample))
	}
	if len(sends) != 1 || sends[0] != "writev" {
		t.Fatalf("GET left as %v, want head and body in one writev", sends)
	}

	resp, body, sends = serveOne(t, "HEAD", set)
	if resp.StatusCode != 200 || len(body) != 0 || resp.ContentLength != int64(len(sample)) {
		t.Fatalf("HEAD: status %d, %d body bytes, length %d", resp.StatusCode, len(body), resp.ContentLength)
	}
	if len(sends) == 0 {
		t.Fatal("HEAD: the head never left")
	}

	replaced := func(c *fasthttp.RequestCtx) {
		Set(&c.Response, sample, c.Conn())
		c.Response.SetStatusCode(500)
		c.Response.SetBodyString("replaced")
	}
	resp, body, _ = serveOne(t, "GET", replaced)
	if resp.StatusCode != 500 || string(body) != "replaced" {
		t.Fatalf("replaced body: status %d, %q", resp.StatusCode, body)
	}

	small := func(c *fasthttp.RequestCtx) { Set(&c.Response, sample[:Direct-1], c.Conn()) }
	if resp, body, _ = serveOne(t, "GET", small); resp.StatusCode != 200 || !bytes.Equal(body, sample[:Direct-1]) {
		t.Fatalf("small body: status %d, %d bytes", resp.StatusCode, len(body))
	}
}
