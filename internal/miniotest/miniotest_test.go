// The MinIO harness starts a server that answers its health check.
package miniotest

import (
	"net/http"
	"testing"
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
