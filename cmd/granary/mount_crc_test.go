package main

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
)

// TestMountUploadsWithCRC32C: files written through a mount reach the
// node as unsigned bodies with a CRC32C trailer the node checks (a proxy
// between them notes every upload), and read back whole through the node.
// The proxy answers the first upload of each file 503 SlowDown: the mount
// sends it again.
func TestMountUploadsWithCRC32C(t *testing.T) {
	needFUSE(t)
	node, clientEnv, cl := nodeForMount(t, "256MiB")
	if err := cl.MakeBucket(context.Background(), "ckpt", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	target, _ := url.Parse("http://" + node.addr)
	var mu sync.Mutex
	var uploads []string         // X-Amz-Content-Sha256 of each PUT with a body
	refused := map[string]bool{} // files whose first upload was refused
	rp := httputil.NewSingleHostReverseProxy(target)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && r.ContentLength != 0 && r.Header.Get("X-Amz-Copy-Source") == "" {
			mu.Lock()
			uploads = append(uploads, r.Header.Get("X-Amz-Content-Sha256"))
			refuse := !refused[r.URL.Path]
			refused[r.URL.Path] = true
			mu.Unlock()
			if refuse {
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/xml")
				w.WriteHeader(http.StatusServiceUnavailable)
				io.WriteString(w, `<Error><Code>SlowDown</Code><Message>try again</Message></Error>`)
				return
			}
		}
		rp.ServeHTTP(w, r)
	}))
	defer proxy.Close()

	dir := t.TempDir()
	m := spawnMount(t, clientEnv, dir, "--endpoint", proxy.URL, "ckpt", dir)
	m.awaitMounted(t, 1)
	files := map[string][]byte{"small.bin": make([]byte, 3000), "model.pt": make([]byte, 40<<20)} // 40 MiB: parts
	for name, data := range files {
		for i := range data {
			data[i] = byte(rand.Uint32())
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatalf("write %s: %v", name, err)
		}
	}
	for name, data := range files {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		obj, err := cl.GetObject(ctx, "ckpt", name, minio.GetObjectOptions{})
		var got []byte
		if err == nil {
			got, err = io.ReadAll(obj)
		}
		cancel()
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s read back through the node: %d bytes (%v), not the %d written", name, len(got), err, len(data))
		}
	}
	mu.Lock()
	seen := append([]string(nil), uploads...)
	mu.Unlock()
	if len(refused) != len(files) {
		t.Errorf("refused the first upload of %d files, want %d", len(refused), len(files))
	}
	if len(seen) < 5 { // each file refused once, then the small file and the large one's parts
		t.Fatalf("%d uploads seen: %q", len(seen), seen)
	}
	for _, mode := range seen {
		if !strings.HasPrefix(mode, "STREAMING-UNSIGNED-PAYLOAD-TRAILER") {
			t.Errorf("an upload went as %q, not unsigned with a trailer (all: %q)", mode, seen)
		}
	}
	if out, err := exec.Command("fusermount3", "-u", dir).CombinedOutput(); err != nil {
		t.Fatalf("fusermount3 -u: %v: %s", err, out)
	}
	m.awaitExit(t, exitOK, 20*time.Second)
}
