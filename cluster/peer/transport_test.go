// The GET transport against a real member: calls reuse kept connections
// and run in the caller's goroutine, a body left unread costs its
// connection and not the next call, a connection the member closed while
// idle is replaced without an error, a cancelled or unanswered call ends
// within its bound, and a timeout is never retried.
package peer

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/granary-dev/granary/cluster"
	"github.com/granary-dev/granary/store"
)

// countingListener counts the connections it accepted and can close
// them all (a member dropping its idle connections).
type countingListener struct {
	net.Listener
	accepted atomic.Int64
	mu       sync.Mutex
	conns    []net.Conn
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
		l.mu.Lock()
		l.conns = append(l.conns, c)
		l.mu.Unlock()
	}
	return c, err
}

func (l *countingListener) closeConns() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.conns {
		c.Close()
	}
	l.conns = nil
}

// countedRig is a rig whose member counts its connections, holding one
// chunk of n bytes.
func countedRig(t *testing.T, n int) (*rig, *countingListener, ChunkRequest, []byte) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: ln}
	r := startRigOn(t, cl, false, nil)
	r.be.chunk = 4 * FrameSize
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(i*13 + i>>10)
	}
	id := store.ChunkID{Bucket: "b", Key: "k", ETag: "e"}
	r.be.chunks[id] = data
	return r, cl, ChunkRequest{ID: id, Len: int64(n), Chunk: r.be.chunk}, data
}

// readChunk reads chunk q from the rig's member whole and checks its
// bytes.
func readChunk(t *testing.T, r *rig, q ChunkRequest, want []byte) {
	t.Helper()
	rc, err := r.client.GetChunk(context.Background(), r.to, q)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || !bytes.Equal(got, want[q.Off:]) {
		t.Fatalf("read %d bytes (%v), want %d", len(got), err, len(want)-int(q.Off))
	}
}

func TestCallsReuseOneConnection(t *testing.T) {
	r, cl, q, data := countedRig(t, FrameSize+1000)
	for range 20 {
		readChunk(t, r, q, data)
		if err := r.client.Ping(context.Background(), r.to); err != nil {
			t.Fatal(err)
		}
	}
	if n := cl.accepted.Load(); n != 1 {
		t.Fatalf("40 calls one after another took %d connections, want 1", n)
	}
	// No goroutine of the transport's own: net/http's keeps a reader and
	// a writer per kept connection.
	buf := make([]byte, 1<<20)
	if s := string(buf[:runtime.Stack(buf, true)]); strings.Contains(s, "persistConn") {
		t.Fatal("a GET left a net/http connection goroutine")
	}
}

func TestBodyLeftUnreadClosesItsConnection(t *testing.T) {
	r, cl, q, data := countedRig(t, 3*FrameSize)
	rc, err := r.client.GetChunk(context.Background(), r.to, q)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(rc, make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	rc.Close() // the rest of the answer is still on the connection
	readChunk(t, r, q, data)
	if n := cl.accepted.Load(); n != 2 {
		t.Fatalf("a call after a body closed early used %d connections in all, want 2", n)
	}
	readChunk(t, r, q, data)
	if n := cl.accepted.Load(); n != 2 {
		t.Fatalf("a whole read did not keep its connection: %d in all, want 2", n)
	}
}

func TestIdleConnectionClosedByTheMember(t *testing.T) {
	r, cl, q, data := countedRig(t, 1000)
	readChunk(t, r, q, data)
	for round := 2; round <= 4; round++ {
		cl.closeConns() // the member drops the kept connection
		readChunk(t, r, q, data)
		if n := cl.accepted.Load(); n != int64(round) {
			t.Fatalf("round %d: %d connections in all, want %d", round, n, round)
		}
	}
}

func TestCancelledCallEnds(t *testing.T) {
	r, cl, q, data := countedRig(t, 1000)
	readChunk(t, r, q, data)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.client.GetChunk(ctx, r.to, q); !errors.Is(err, context.Canceled) {
		t.Fatalf("a call with its context cancelled: %v, want context.Canceled", err)
	}
	readChunk(t, r, q, data)
	if n := cl.accepted.Load(); n > 2 {
		t.Fatalf("%d connections, want at most 2", n)
	}
}

// stuckMember accepts calls and writes answer (perhaps nothing, perhaps
// a head and part of a body) to each, then holds the connection open
// without another byte until the test ends.
func stuckMember(t *testing.T, answer string) cluster.Member {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var held sync.WaitGroup
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); close(done); held.Wait() })
	held.Add(1)
	go func() {
		defer held.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held.Add(1)
			go func() {
				defer held.Done()
				defer c.Close()
				c.Read(make([]byte, 4096)) // the call's head
				io.WriteString(c, answer)
				<-done
			}()
		}
	}()
	return cluster.Member{ID: "n1", Addr: ln.Addr().String()}
}

func TestUnansweredCallTimesOut(t *testing.T) {
	to := stuckMember(t, "")
	c := NewClient("n2", []byte(testSecret), 300*time.Millisecond)
	t.Cleanup(c.Close)
	start := time.Now()
	_, err := c.GetChunk(context.Background(), to, ChunkRequest{ID: store.ChunkID{Bucket: "b", Key: "k"}, Len: 10, Chunk: 1 << 10})
	if err == nil {
		t.Fatal("a member that never answered answered")
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("the call took %v, bounded by a 300ms timeout", d)
	}
}

// TestStalledBodyEnds: a read blocked on a member gone silent mid-answer
// returns once its body is closed from another goroutine (what a
// caller's stall watch does), or its context is cancelled.
func TestStalledBodyEnds(t *testing.T) {
	to := stuckMember(t, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"+strings.Repeat("x", 100))
	c := NewClient("n2", []byte(testSecret), 5*time.Second)
	t.Cleanup(c.Close)
	for _, how := range []string{"close", "cancel"} {
		ctx, cancel := context.WithCancel(context.Background())
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+to.Addr+"/x", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan error, 1)
		go func() {
			_, err := io.ReadFull(resp.Body, make([]byte, 1000))
			got <- err
		}()
		if how == "close" {
			time.AfterFunc(50*time.Millisecond, func() { resp.Body.Close() })
		} else {
			time.AfterFunc(50*time.Millisecond, cancel)
		}
		select {
		case err := <-got:
			if err == nil {
				t.Fatalf("%s: a body cut short read whole", how)
			}
			if how == "cancel" && !errors.Is(err, context.Canceled) {
				t.Fatalf("cancel: %v, want context.Canceled", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: the blocked read did not end", how)
		}
		cancel()
		resp.Body.Close()
	}
}

// TestTimeoutOnAKeptConnectionIsNotRetried: a member that answered once
// and then went silent on the kept connection costs one timeout and an
// error, not a retry on a new connection (which would answer here).
func TestTimeoutOnAKeptConnectionIsNotRetried(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: ln}
	t.Cleanup(func() { cl.Close(); cl.closeConns() })
	go func() {
		for {
			c, err := cl.Accept()
			if err != nil {
				return
			}
			go func() { // answers the first call, then reads and ignores
				c.Read(make([]byte, 4096))
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
				io.Copy(io.Discard, c)
			}()
		}
	}()
	c := NewClient("n2", []byte(testSecret), 300*time.Millisecond)
	t.Cleanup(c.Close)
	call := func() error {
		req, err := http.NewRequest(http.MethodGet, "http://"+ln.Addr().String()+"/x", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.tr.RoundTrip(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, err = io.ReadAll(resp.Body)
		return err
	}
	if err := call(); err != nil {
		t.Fatal(err)
	}
	if err := call(); err == nil {
		t.Fatal("a call the member never answered succeeded")
	}
	if n := cl.accepted.Load(); n != 1 {
		t.Fatalf("the silent call was retried: %d connections, want 1", n)
	}
}
