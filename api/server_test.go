// Graceful shutdown: an open request finishes, a connection that never
// sent a byte does not hold the shutdown up, and nothing is served after.
package api

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/granary-dev/granary/gateway"
)

func TestShutdown(t *testing.T) {
	e, served := serveUnmanaged(t)
	srv, eng := e.srv, e.eng
	bucket := e.makeBucket(t, "shutdown")

	// A connection that never sends a byte.
	idle, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	// A PUT whose body is half sent when the shutdown starts.
	const size = 64 << 10
	conn, head := e.startRawPut(t, bucket, "late", size)
	defer conn.Close()
	if _, err := conn.Write(append(head, make([]byte, size/2)...)); err != nil {
		t.Fatal(err)
	}
	// Start the shutdown only once the server is reading the PUT (a
	// request whose first bytes are still in flight may be cut short,
	// and a connection not accepted yet is reset when the listener
	// closes) and holds the idle connection.
	awaitReading(t, srv, conn)
	awaitUnused(t, srv, 1)
	shut := make(chan error, 1)
	start := time.Now()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		shut <- srv.Shutdown(ctx)
	}()
	// The listener closes; then the rest of the body arrives.
	awaitRefused(t, e.addr)
	if _, err := conn.Write(make([]byte, size-size/2)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("in-flight PUT: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("in-flight PUT during shutdown: %d", resp.StatusCode)
	}
	if err := <-shut; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Shutdown took %v: the unused connection held it", d)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
	if _, err := eng.Head(context.Background(), bucket, "late"); err != nil {
		t.Errorf("the PUT finished during shutdown is not stored: %v", err)
	}
}

// unservedServer is a Server over a directory origin, its engine, a
// loopback listener it does not serve yet, and the origin's root.
func unservedServer(t *testing.T) (*Server, *gateway.Engine, net.Listener, string) {
	t.Helper()
	origin, root := openFS(t)
	eng, err := gateway.New(gateway.Options{Origin: origin})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	srv, jobs, err := newNode(eng, nodeOptions{Access: accessForTest()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { jobs.Close() }) // after the test's Shutdown
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return srv, eng, ln, root
}

// serveUnmanaged starts a Server over a directory origin that the test
// itself shuts down; served yields Serve's result.
func serveUnmanaged(t *testing.T) (*env, <-chan error) {
	srv, eng, ln, root := unservedServer(t)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() { // a no-op once the test shut the server down
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	e := &env{srv: srv, eng: eng, addr: ln.Addr().String(), root: root}
	e.client = e.newClient(t, nil)
	awaitReady(t, "http://"+e.addr+"/healthz")
	return e, served
}

// startRawPut returns a connection and the signed header block of an
// UNSIGNED-PAYLOAD PUT of size bytes.
func (e *env) startRawPut(t *testing.T, bucket, key string, size int64) (net.Conn, []byte) {
	t.Helper()
	return e.dialPut(t, "/"+bucket+"/"+key, "", size, "")
}

// dialPut dials the server and returns the connection (closed when the
// test ends; 30 s deadline) and the signed header block of an
// UNSIGNED-PAYLOAD PUT of path?query declaring size bytes; extra is
// header lines, each ending in CRLF, sent unsigned (Expect).
func (e *env) dialPut(t *testing.T, path, query string, size int64, extra string) (net.Conn, []byte) {
	t.Helper()
	req := e.buildRequest(t, rawRequest{method: http.MethodPut, path: path, query: query, unsigned: true,
		header: http.Header{"X-Amz-Content-Sha256": {"UNSIGNED-PAYLOAD"}}})
	req.ContentLength = size
	req = signV4(req)
	conn, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	var head bytes.Buffer
	fmt.Fprintf(&head, "PUT %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n%s", req.URL.RequestURI(), e.addr, size, extra)
	for k, vs := range req.Header {
		for _, v := range vs {
			fmt.Fprintf(&head, "%s: %s\r\n", k, v)
		}
	}
	head.WriteString("\r\n")
	return conn, head.Bytes()
}

// awaitUnused polls until exactly n of srv's connections have not read a
// byte.
func awaitUnused(t *testing.T, srv *Server, n int) {
	t.Helper()
	awaitConn(t, srv, fmt.Sprintf("%d unused connections", n), func(tl *trackingListener) bool {
		unused := 0
		for c := range tl.conns {
			if !c.used.Load() {
				unused++
			}
		}
		return unused == n
	})
}

// awaitReading polls until srv accepted the client connection conn and
// read from it.
func awaitReading(t *testing.T, srv *Server, conn net.Conn) {
	t.Helper()
	awaitConn(t, srv, "the connection from "+conn.LocalAddr().String()+" read", func(tl *trackingListener) bool {
		for c := range tl.conns {
			if c.RemoteAddr().String() == conn.LocalAddr().String() && c.used.Load() {
				return true
			}
		}
		return false
	})
}

// awaitConn polls until ok holds of srv's listener (under its lock).
func awaitConn(t *testing.T, srv *Server, what string, ok func(*trackingListener) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		tl := srv.ln.Load()
		tl.mu.Lock()
		done := ok(tl)
		tl.mu.Unlock()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not after 10 s: %s", what)
		}
		time.Sleep(5 * time.Millisecond) // polling interval
	}
}

// awaitRefused polls until addr refuses connections.
func awaitRefused(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatalf("%s still accepts connections", addr)
		}
		time.Sleep(5 * time.Millisecond) // polling interval
	}
}

// TestSpareConnectionClosedSilently: a connection that never sends a byte
// is closed at the header timeout without a response, which its client
// would read as an answer to a request it never made.
func TestSpareConnectionClosedSilently(t *testing.T) {
	e := newEnv(t, backends[0], func(o *nodeOptions) { o.ReadHeaderTimeout = 300 * time.Millisecond })
	conn, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, err := io.ReadAll(conn)
	if len(b) != 0 || err != nil {
		t.Fatalf("the spare connection got %q (%v); want it closed without a byte", b, err)
	}
	// A connection that sent part of a request still hears why it failed.
	part, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer part.Close()
	part.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n"))
	part.SetReadDeadline(time.Now().Add(10 * time.Second))
	if b, _ := io.ReadAll(part); !bytes.HasPrefix(b, []byte("HTTP/1.1 4")) {
		t.Fatalf("a half-sent request got %q; want a 4xx answer", b)
	}
}

// A shutdown that comes before Serve has started (a SIGTERM right after
// start): Serve returns at once instead of serving for good.
func TestShutdownBeforeServe(t *testing.T) {
	srv, _, ln, _ := unservedServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		if err != nil && !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Serve after Shutdown: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Serve after Shutdown still serves a minute later")
	}
	if c, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second); err == nil {
		c.Close()
		t.Fatal("the listener still accepts after Shutdown")
	}
}
