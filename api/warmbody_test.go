// A warm in-memory body leaves the node as it is, not copied into the
// response buffer (internal/membody), through the whole request path.
package api

import (
	"bytes"
	"net"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/granary-dev/granary/gateway"
	"github.com/granary-dev/granary/store/ram"
)

// TestWarmBodyLeavesUncopied: a GET of an object the engine holds whole
// in memory (past directBody) writes the body to the connection by
// itself, straight from memory: one write of exactly its bytes. A handler
// path that reads the stream into a buffer first (fasthttp's Body(), as
// the request's report once did) sends headers and body as one copy.
func TestWarmBodyLeavesUncopied(t *testing.T) {
	origin, root := backends[0].open(t)
	writes := make(chan int, 1024)
	e := newEnvListening(t, gateway.Options{Origin: origin, RAM: ram.New(ram.Options{Capacity: 64 << 20})}, root, nil,
		func(ln net.Listener) net.Listener { return sizesListener{ln, writes} })
	bucket := e.makeBucket(t, "warm")
	body := bytes.Repeat([]byte("0123456789"), 10_000) // 100,000 bytes
	e.put(t, bucket, "sample", body, minio.PutObjectOptions{})
	for range 2 { // the first read may fill the cache; the second is warm
		for len(writes) > 0 {
			<-writes
		}
		if got, err := e.get(t, bucket, "sample", minio.GetObjectOptions{}); err != nil || !bytes.Equal(got, body) {
			t.Fatalf("read %d bytes, %v; want the object's %d", len(got), err, len(body))
		}
	}
	for len(writes) > 0 {
		if <-writes == len(body) {
			return
		}
	}
	t.Fatal("the warm body did not leave in a write of its own: it was copied into the response buffer")
}

// sizesListener's connections send the size of every write to sizes
// (dropped when it is full).
type sizesListener struct {
	net.Listener
	sizes chan int
}

func (l sizesListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return sizesConn{c, l.sizes}, nil
}

type sizesConn struct {
	net.Conn
	sizes chan int
}

func (c sizesConn) Write(p []byte) (int, error) {
	select {
	case c.sizes <- len(p):
	default:
	}
	return c.Conn.Write(p)
}
