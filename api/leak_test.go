// A client that disconnects mid-GET leaves nothing running behind it: the
// engine's reader is closed, its context cancelled, the goroutines gone.
package api

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/granary-dev/granary/internal/goroutines"
	"github.com/granary-dev/granary/store"
)

func TestNoLeakOnClientDisconnect(t *testing.T) {
	// The S3 origin's connections: idle ones stay pooled on purpose, as
	// many as origin reads once ran at the same time.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	openPooled := func(t testing.TB) (store.Origin, string) { return openS3Over(t, tr) }
	for _, b := range []backend{{"fs", openFS}, {"s3", openPooled}} {
		t.Run(b.name, func(t *testing.T) {
			e := newEnv(t, b)
			bucket := e.makeBucket(t, "leak")
			const size = 40 << 20
			e.put(t, bucket, "big", randomBytes(size), minio.PutObjectOptions{DisableMultipart: true})
			// One full read first, so pools and origin connections exist
			// before the baseline is taken.
			if got, err := e.get(t, bucket, "big", minio.GetObjectOptions{}); err != nil || len(got) != size {
				t.Fatalf("warm-up get: %d bytes, %v", len(got), err)
			}
			base := goroutines.Snapshot()
			for range 4 {
				e.abandonGet(t, bucket, "big", 300<<10)
			}
			// Read-ahead fetches already started finish on their own
			// (bounded by the fetch timeout); then nothing may be left.
			if err := goroutines.LeakedSettling(tr.CloseIdleConnections, base, 30*time.Second, goroutines.IdleServerWorkers); err != nil {
				t.Fatalf("after disconnects: %v", err)
			}
			// The server still serves.
			if got, err := e.get(t, bucket, "big", minio.GetObjectOptions{}); err != nil || len(got) != size {
				t.Fatalf("get after disconnects: %d bytes, %v", len(got), err)
			}
		})
	}
}

// abandonGet starts a signed GET on a bare connection, reads n bytes of the
// response and closes the connection.
func (e *env) abandonGet(t *testing.T, bucket, key string, n int64) {
	t.Helper()
	req := e.buildRequest(t, rawRequest{method: http.MethodGet, path: "/" + bucket + "/" + key})
	conn, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	var wire bytes.Buffer
	if err := req.Write(&wire); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write(wire.Bytes()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET: %d", resp.StatusCode)
	}
	if _, err := io.CopyN(io.Discard, resp.Body, n); err != nil {
		t.Fatal(err)
	}
}
