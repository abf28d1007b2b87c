// A connection that sends a large body gets the wider send buffer where
// the kernel grants it; one that sends a smaller body keeps its own.
package api

import (
	"net"
	"testing"

	"golang.org/x/sys/unix"
)

func TestWideSendBufferForLargeBodies(t *testing.T) {
	_, server, _ := tcpPair(t)
	tc := &trackedConn{Conn: server}
	before := sendBuffer(t, server)
	tc.widen(wideBody - 1)
	if got := sendBuffer(t, server); got != before {
		t.Fatalf("a body under %d bytes changed the send buffer from %d to %d", wideBody, before, got)
	}
	tc.widen(wideBody)
	got := sendBuffer(t, server)
	switch {
	case canWiden() && got < 2*wideSendBuffer: // the kernel doubles what it is asked for
		t.Fatalf("a large body's send buffer is %d bytes, want %d", got, 2*wideSendBuffer)
	case !canWiden() && got != before:
		t.Fatalf("the kernel caps buffers under %d, yet the send buffer changed from %d to %d", wideSendBuffer, before, got)
	}
}

// sendBuffer is c's SO_SNDBUF as the kernel reports it.
func sendBuffer(t *testing.T, c net.Conn) int {
	t.Helper()
	raw, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	var gerr error
	if err := raw.Control(func(fd uintptr) { n, gerr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF) }); err != nil {
		t.Fatal(err)
	}
	if gerr != nil {
		t.Fatal(gerr)
	}
	return n
}
