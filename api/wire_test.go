// Tests of what goes on the wire byte for byte, where Go's HTTP client
// would hide it (it canonicalises header names).
package api

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"sync"
	"testing"

	"github.com/minio/minio-go/v7"
)

// tapConn records every byte read from the server.
type tapConn struct {
	net.Conn
	mu  *sync.Mutex
	buf *bytes.Buffer
}

func (c tapConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	c.buf.Write(p[:n])
	c.mu.Unlock()
	return n, err
}

func TestUserMetadataNamesGoOutLowerCase(t *testing.T) {
	e := newEnv(t, backends[0])
	bucket := e.makeBucket(t, "wire")
	e.put(t, bucket, "k", []byte("x"), minio.PutObjectOptions{UserMetadata: map[string]string{"Dataset-Name": "imagenet"}})

	var mu sync.Mutex
	var wire bytes.Buffer
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return tapConn{Conn: conn, mu: &mu, buf: &wire}, nil
	}}
	defer tr.CloseIdleConnections()
	if _, err := e.newClient(t, tr).StatObject(context.Background(), bucket, "k", minio.StatObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !bytes.Contains(wire.Bytes(), []byte("\r\nx-amz-meta-dataset-name: imagenet\r\n")) {
		t.Fatalf("metadata header not sent lower-case; response was:\n%s", wire.String())
	}
	if !bytes.Contains(wire.Bytes(), []byte("\r\nContent-Type: ")) {
		t.Fatalf("standard headers lost their canonical case:\n%s", wire.String())
	}
}
