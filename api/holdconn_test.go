// trackedConn holds a response's head for its body (membody.Conn): one
// writev carries both, Release sends a head alone, and the count a
// WriteBuffers returns is the body's.
package api

import (
	"io"
	"net"
	"testing"
	"time"
)

func TestTrackedConnHoldsTheHead(t *testing.T) {
	client, raw, ln := tcpPair(t)
	tl := newTrackingListener(ln, 0, func() {})
	c := tl.admit(raw)
	defer c.Close()
	expect := func(want string) {
		t.Helper()
		got := make([]byte, len(want))
		if _, err := io.ReadFull(client, got); err != nil || string(got) != want {
			t.Fatalf("client read %q, %v; want %q", got, err, want)
		}
	}

	c.Hold()
	c.Write([]byte("HEAD1 "))
	c.Write([]byte("HEAD2 "))
	v := net.Buffers{[]byte("body-a "), []byte("body-b ")}
	if n, err := c.WriteBuffers(&v); err != nil || n != 14 {
		t.Fatalf("WriteBuffers = %d, %v; want the body's 14 bytes", n, err)
	}
	expect("HEAD1 HEAD2 body-a body-b ")

	c.Write([]byte("after ")) // the hold ended: sent at once
	expect("after ")

	c.Hold()
	c.Write([]byte("alone "))
	if err := c.Release(); err != nil {
		t.Fatal(err)
	}
	expect("alone ")
	if err := c.Release(); err != nil { // nothing held: a no-op
		t.Fatal(err)
	}

	c.Hold()
	c.Write([]byte("dropped "))
	c.silent.Store(true)
	v = net.Buffers{[]byte("body ")}
	if n, err := c.WriteBuffers(&v); err != nil || n != 5 {
		t.Fatalf("silenced WriteBuffers = %d, %v", n, err)
	}
	c.silent.Store(false)
	c.Write([]byte("end"))
	expect("end")
}

// tcpPair returns both ends of a loopback connection and the listener
// that accepted it, all closed when t ends; the client's reads fail
// after 30 s.
func tcpPair(t *testing.T) (client, server net.Conn, ln net.Listener) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	server, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	client.SetReadDeadline(time.Now().Add(30 * time.Second))
	return client, server, ln
}
