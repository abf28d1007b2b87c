// A connection to a listener that never reads: writes fill the buffers,
// then stall, and the stalled write fails with a timeout instead of
// blocking; a reader that keeps reading is never cut off.
package stallconn

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// serve accepts connections on a loopback listener; each is handed to
// handle.
func serve(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
			go handle(c)
		}
	}()
	return ln.Addr().String()
}

func TestStalledWriteFails(t *testing.T) {
	addr := serve(t, func(net.Conn) {}) // never reads
	c, err := Dial(&net.Dialer{}, 200*time.Millisecond)(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, 1<<20)
	done := make(chan error, 1)
	go func() {
		for {
			if _, err := c.Write(buf); err != nil {
				done <- err
				return
			}
		}
	}()
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("stalled write failed with %v, want a deadline error", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("a write to a peer that never reads still blocks after a minute")
	}
}

// A slow reader that keeps reading: the transfer as a whole takes longer
// than the stall timeout, and no write fails.
func TestMovingWritesGoOn(t *testing.T) {
	addr := serve(t, func(c net.Conn) {
		buf := make([]byte, 256<<10)
		for {
			if _, err := io.ReadFull(c, buf); err != nil {
				return
			}
			time.Sleep(50 * time.Millisecond) // a slow reader: pacing, not a wait
		}
	})
	const stall = time.Second
	c, err := Dial(&net.Dialer{}, stall)(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	buf := make([]byte, 64<<10)
	for i := range 256 { // 16 MiB, more than the socket buffers hold
		if _, err := c.Write(buf); err != nil {
			t.Fatalf("write %d to a reading peer: %v", i, err)
		}
	}
	t.Logf("16 MiB to a slow reader in %v with a stall timeout of %v", time.Since(start).Round(time.Millisecond), stall)
}
