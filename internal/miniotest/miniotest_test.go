// The MinIO harness starts a server that answers its health check, over
// HTTP and over HTTPS.
package miniotest

import (
	"crypto/tls"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/granary-dev/granary/internal/testcerts"
)

func TestStartServesHealth(t *testing.T) {
	s := StartT(t)
	resp, err := http.Get(s.URL() + "/minio/health/live")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
}

func TestStartServesHTTPS(t *testing.T) {
	ca := testcerts.NewCA(t)
	dir := t.TempDir()
	ca.Leaf(t, filepath.Join(dir, "public.crt"), filepath.Join(dir, "private.key"))
	s := StartTWith(t, Options{CertsDir: dir, RootCAs: ca.Pool()})
	if !strings.HasPrefix(s.URL(), "https://") {
		t.Fatalf("URL %s", s.URL())
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get(s.URL() + "/minio/health/live")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.TLS == nil {
		t.Fatalf("status %d, TLS %v", resp.StatusCode, resp.TLS != nil)
	}
}
