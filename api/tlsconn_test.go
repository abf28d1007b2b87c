// Tests of the record-batching TLS connection: large writes arrive whole
// in fewer socket writes than records, a server that writes first does
// not deadlock its own handshake, and a peer gone mid-write fails the
// write instead of hanging it.
package api

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"io"
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/granary-dev/granary/internal/testcerts"
)

// countingListener counts the writes to the sockets it accepts.
type countingListener struct {
	net.Listener
	writes atomic.Int64
}

type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, writes: &l.writes}, nil
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// tlsPair is a server side from newTLSListener and a client side of one
// TLS connection, and the server's socket writes so far.
type tlsPair struct {
	server net.Conn
	client *tls.Conn
	writes *atomic.Int64
}

func newTLSPair(t *testing.T) tlsPair {
	t.Helper()
	dir := t.TempDir()
	ca := testcerts.NewCA(t)
	certFile, keyFile := filepath.Join(dir, "node.crt"), filepath.Join(dir, "node.key")
	ca.Leaf(t, certFile, keyFile)
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	counting := &countingListener{Listener: raw}
	ln := newTLSListener(counting, &tls.Config{Certificates: []tls.Certificate{pair}})
	t.Cleanup(func() { ln.Close() })
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
		close(accepted)
	}()
	cc, err := net.Dial("tcp", raw.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	client := tls.Client(cc, &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost"})
	t.Cleanup(func() { client.Close() })
	server, ok := <-accepted
	if !ok {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { server.Close() })
	for _, c := range []net.Conn{server, client} {
		c.SetDeadline(time.Now().Add(time.Minute))
	}
	return tlsPair{server: server, client: client, writes: &counting.writes}
}

func TestTLSConnBatchesLargeWrites(t *testing.T) {
	p := newTLSPair(t)
	// The server writes first: its handshake must not wait in a batch.
	body := bytes.Repeat([]byte("0123456789abcdef"), (4<<20+333)/16)
	sent := make(chan error, 1)
	go func() {
		_, err := p.server.Write(body)
		sent <- err
	}()
	if err := p.client.Handshake(); err != nil {
		t.Fatal(err)
	}
	before := p.writes.Load()
	got := make([]byte, len(body))
	if _, err := io.ReadFull(p.client, got); err != nil {
		t.Fatal(err)
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	if sha256.Sum256(got) != sha256.Sum256(body) {
		t.Fatal("the bytes read differ from the bytes written")
	}
	records := int64(len(body)/maxRecordData + 1)
	// The writes counted since the handshake: the data's, and at most
	// the handshake's last flight (and TLS 1.3 session tickets).
	if n := p.writes.Load() - before; n > records/4+4 {
		t.Errorf("%d socket writes for %d records: not batched", n, records)
	}
	// A small write is one record and one socket write, sent at once.
	before = p.writes.Load()
	if _, err := p.server.Write([]byte("small")); err != nil {
		t.Fatal(err)
	}
	small := make([]byte, 5)
	if _, err := io.ReadFull(p.client, small); err != nil || string(small) != "small" {
		t.Fatalf("small write: %q, %v", small, err)
	}
	if n := p.writes.Load() - before; n != 1 {
		t.Errorf("a small write took %d socket writes", n)
	}
}

func TestTLSConnWriteToGonePeerFails(t *testing.T) {
	p := newTLSPair(t)
	done := make(chan error, 1)
	go func() { done <- p.server.(*tlsConn).Handshake() }()
	if err := p.client.Handshake(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	p.client.NetConn().Close()
	body := make([]byte, 8<<20)
	var err error
	// The first writes may fit in the socket's buffers; the peer's reset
	// fails a later one.
	for range 64 {
		if _, err = p.server.Write(body); err != nil {
			break
		}
	}
	if err == nil {
		t.Fatal("writes to a closed peer kept succeeding")
	}
	if connState(&trackedConn{Conn: p.server}) == nil {
		t.Error("connState sees no TLS through the batching connection")
	}
}
