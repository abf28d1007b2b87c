// Tests of the nginx reference target over a real MinIO: an anonymous GET
// is a miss and then a cache hit, a signed PUT passes through to the
// origin, and the loadtest client reads through it unsigned.
package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/granary-dev/granary/internal/miniotest"
)

// needNginx fails a test when nginx is not installed: `make test`
// installs it (scripts/deps.sh), so its absence is a broken setup.
func needNginx(t *testing.T) {
	t.Helper()
	if _, err := nginxBinary(); err != nil {
		t.Fatalf("%v (make deps installs it)", err)
	}
}

func TestNginxReferenceCaches(t *testing.T) {
	if testing.Short() {
		t.Skip("starts MinIO and nginx")
	}
	needNginx(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	mio := miniotest.StartT(t)
	cl, err := newCkptClient(mio.Endpoint, mio.AccessKey, mio.SecretKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.MakeBucket(ctx, "ref", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := makePublicRead(ctx, cl, "ref"); err != nil {
		t.Fatal(err)
	}
	data := randomBytes(300<<10, 11)
	if _, err := cl.PutObject(ctx, "ref", "a/obj", bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	n, err := startNginx(nginxOptions{upstream: mio.Endpoint, objects: 10, bytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer n.stop()
	for i, want := range []string{"MISS", "HIT"} {
		if got := anonGet(t, ctx, n.endpoint()+"/ref/a/obj", data); got != want {
			t.Fatalf("GET %d: %s %q, want %q", i+1, cacheStatusHeader, got, want)
		}
	}
	// A signed PUT through nginx reaches the origin (the signature holds:
	// nginx passes the Host header the client signed), and reads of it
	// through nginx and the loadtest client see the new bytes.
	ncl, err := newCkptClient(n.addr, mio.AccessKey, mio.SecretKey)
	if err != nil {
		t.Fatal(err)
	}
	other := randomBytes(200<<10, 12)
	if _, err := ncl.PutObject(ctx, "ref", "b/obj", bytes.NewReader(other), int64(len(other)), minio.PutObjectOptions{}); err != nil {
		t.Fatalf("PUT through nginx: %v\n%s", err, n.tail())
	}
	lc := newClient(target{name: "nginx", endpoint: n.endpoint(), anonymous: true}, "ref", 2)
	defer lc.close()
	buf := make([]byte, 64<<10)
	for range 2 {
		// A range first: on the miss too, nginx answers 206.
		if _, err := lc.get(ctx, "b/obj", 1000, other[1000:5000], false, buf); err != nil {
			t.Fatal(err)
		}
		if _, err := lc.get(ctx, "b/obj", 0, other, true, buf); err != nil {
			t.Fatal(err)
		}
	}
	if h, m := lc.cacheHits(); h != 3 || m != 1 {
		t.Errorf("client counted %d hits, %d other answers; want 3 and 1", h, m)
	}
}

// anonGet GETs url without credentials, checks the body against want and
// returns the cache status header.
func anonGet(t *testing.T, ctx context.Context, url string, want []byte) string {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || !bytes.Equal(body, want) {
		t.Fatalf("GET %s: status %d, %d bytes, err %v", url, resp.StatusCode, len(body), err)
	}
	return resp.Header.Get(cacheStatusHeader)
}
