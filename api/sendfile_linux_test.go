//go:build linux

// SendFile over a real socket: a held head and a file's bytes arrive in
// order, send after send, and a send allocates nothing once the
// connection has sent one.
package api

import (
	"bytes"
	"io"
	"os"
	"testing"

	"github.com/granary-dev/granary/internal/racedetect"
)

func TestSendFileAllocs(t *testing.T) {
	if racedetect.On {
		t.Skip("the race detector allocates")
	}
	client, server, _ := tcpPair(t)
	f, err := os.CreateTemp(t.TempDir(), "body")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	body := bytes.Repeat([]byte("0123456789abcdef"), 8<<10) // 128 KiB
	if _, err := f.Write(body); err != nil {
		t.Fatal(err)
	}
	head := []byte("HTTP/1.1 200 OK\r\nContent-Length: 65536\r\n\r\n")
	const off, n = 1000, 64 << 10
	want := append(append([]byte(nil), head...), body[off:off+n]...)
	sends := make(chan struct{}, 1)
	got := make(chan error, 1)
	go func() { // reads each send whole and checks it
		buf := make([]byte, len(want))
		for range sends {
			_, err := io.ReadFull(client, buf)
			if err == nil && !bytes.Equal(buf, want) {
				err = io.ErrUnexpectedEOF
			}
			got <- err
		}
	}()
	defer close(sends)
	tc := &trackedConn{Conn: server}
	send := func() {
		tc.Hold()
		tc.Write(head) //nolint:errcheck // held: it cannot fail
		sends <- struct{}{}
		if m, err := tc.SendFile(f.Fd(), off, n); err != nil || m != n {
			t.Fatalf("SendFile = %d, %v; want %d", m, err, n)
		}
		if err := <-got; err != nil {
			t.Fatalf("the client read other bytes than the head and the file's: %v", err)
		}
	}
	send()
	if a := testing.AllocsPerRun(50, send); a != 0 {
		t.Fatalf("a send allocates %v times", a)
	}
}
