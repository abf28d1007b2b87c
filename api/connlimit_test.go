// The per-address connection cap over real TCP connections: a connection
// over it is closed at once, another address is not affected, a freed slot
// is usable again, and the count returns to nothing when all are closed.
package api

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestMaxConnsPerIP(t *testing.T) {
	const limit = 3
	e := newEnv(t, backends[0], func(o *nodeOptions) {
		o.MaxConnsPerIP = limit
		o.ReadHeaderTimeout = 10 * time.Minute // admitted spare connections stay open
	})
	http.DefaultTransport.(*http.Transport).CloseIdleConnections() // awaitReady's
	local := netip.MustParseAddr("127.0.0.1")
	awaitConns(t, e.srv, local, 0)

	var held []net.Conn
	for range limit {
		held = append(held, dialFrom(t, "127.0.0.1", e.addr))
	}
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	awaitConns(t, e.srv, local, limit)

	// One more from the same address is closed without a byte.
	over := dialFrom(t, "127.0.0.1", e.addr)
	defer over.Close()
	over.SetReadDeadline(time.Now().Add(time.Minute))
	if b, err := io.ReadAll(over); len(b) != 0 || isTimeout(err) {
		t.Fatalf("connection over the limit: read %q, %v; want it closed at once", b, err)
	}

	// Another address is not limited, and sees the refusal counted.
	metrics := getOn(t, dialFrom(t, "127.0.0.2", e.addr), "/metrics")
	if !strings.Contains(metrics, "granary_connections_refused_total 1\n") {
		t.Errorf("metrics lack one refused connection:\n%s", metrics)
	}

	// A slot freed by a close is usable again.
	held[0].Close()
	awaitConns(t, e.srv, local, limit-1)
	held[0] = dialFrom(t, "127.0.0.1", e.addr)
	if got := getOn(t, held[0], "/healthz"); got != "ok" {
		t.Fatalf("healthz on a freed slot: %q", got)
	}

	// Nothing is left counted once every connection is gone.
	for _, c := range held {
		c.Close()
	}
	awaitConns(t, e.srv, local, 0)
	awaitConns(t, e.srv, netip.MustParseAddr("127.0.0.2"), 0)
	tl := e.srv.ln.Load()
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if len(tl.perIP) != 0 || len(tl.conns) != 0 {
		t.Fatalf("left tracked: %v addresses, %d connections", tl.perIP, len(tl.conns))
	}
}

// dialFrom connects to addr from the loopback address src.
func dialFrom(t *testing.T, src, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 30 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// getOn sends GET path on conn, returns the 200 response's body and
// closes conn.
func getOn(t *testing.T, conn net.Conn, path string) string {
	t.Helper()
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(time.Minute))
	if _, err := io.WriteString(conn, "GET "+path+" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", path, resp.StatusCode, err)
	}
	return string(b)
}

// awaitConns polls until srv counts n open connections from ip.
func awaitConns(t *testing.T, srv *Server, ip netip.Addr, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		tl := srv.ln.Load()
		tl.mu.Lock()
		got := tl.perIP[ip]
		tl.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s holds %d connections, want %d", ip, got, n)
		}
		time.Sleep(5 * time.Millisecond) // polling interval
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
