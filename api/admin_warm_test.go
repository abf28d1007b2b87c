// Warm-ups and status through the signed admin API: start, poll, list,
// cancel, the bad requests, and a node without a catalog.
package api

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/rs/zerolog"

	"github.com/granary-dev/granary/gateway"
	"github.com/granary-dev/granary/ops"
	"github.com/granary-dev/granary/store/catalog"
	"github.com/granary-dev/granary/store/ram"
)

func TestAdminWarm(t *testing.T) {
	base, root := openS3(t)
	cat, err := catalog.Open(catalog.Options{Path: filepath.Join(t.TempDir(), "c.db"), Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	e := newEnvOver(t, gateway.Options{Origin: base, Catalog: cat, RAM: ram.New(ram.Options{Capacity: 64 << 20})}, root, nil)
	bucket := e.makeBucket(t, "warm")
	for _, k := range []string{"d/a", "d/b", "d/c", "other"} {
		e.put(t, bucket, k, []byte("body of "+k), minio.PutObjectOptions{})
	}
	status := func(rr rawRequest) ops.WarmStatus {
		t.Helper()
		resp, body := e.do(t, rr)
		var st ops.WarmStatus
		if resp.StatusCode != 200 || json.Unmarshal(body, &st) != nil || st.ID == "" {
			t.Fatalf("%s ?%s: %d %s", rr.method, rr.query, resp.StatusCode, body)
		}
		return st
	}
	st := status(rawRequest{method: http.MethodPost, path: "/_granary/warm", query: "bucket=" + bucket + "&prefix=d%2F&parallel=2"})
	deadline := time.Now().Add(30 * time.Second)
	for st.State == ops.WarmRunning && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		st = status(rawRequest{method: http.MethodGet, path: "/_granary/warm", query: "id=" + st.ID})
	}
	if st.State != ops.WarmDone || st.Listed != 3 || st.Fetched != 3 || st.Spec.Parallel != 2 {
		t.Fatalf("warm-up: %+v", st)
	}
	resp, body := e.do(t, rawRequest{method: http.MethodGet, path: "/_granary/warm"})
	var all []ops.WarmStatus
	if resp.StatusCode != 200 || json.Unmarshal(body, &all) != nil || len(all) != 1 || all[0].ID != st.ID {
		t.Fatalf("job list: %d %s", resp.StatusCode, body)
	}
	if st := status(rawRequest{method: http.MethodDelete, path: "/_granary/warm", query: "id=" + st.ID}); st.State != ops.WarmDone {
		t.Fatalf("cancelling a finished job changed it: %+v", st)
	}
	resp, body = e.do(t, rawRequest{method: http.MethodGet, path: "/_granary/status", query: "bucket=" + bucket})
	var ns ops.Status
	if resp.StatusCode != 200 || json.Unmarshal(body, &ns) != nil || len(ns.Buckets) != 1 || ns.Buckets[0].Objects != 3 {
		t.Fatalf("status: %d %s", resp.StatusCode, body)
	}
	for _, c := range []struct {
		rr   rawRequest
		code string
	}{
		{rawRequest{method: http.MethodPost, path: "/_granary/warm", query: "bucket=" + bucket, unsigned: true}, "AccessDenied"},
		{rawRequest{method: http.MethodGet, path: "/_granary/status", unsigned: true}, "AccessDenied"},
		{rawRequest{method: http.MethodPost, path: "/_granary/warm", query: "bucket=no-such-bucket-x"}, "NoSuchBucket"},
		{rawRequest{method: http.MethodPost, path: "/_granary/warm", query: "bucket=Bad_Name"}, "InvalidBucketName"},
		{rawRequest{method: http.MethodPost, path: "/_granary/warm", query: "bucket=" + bucket + "&parallel=0"}, "InvalidArgument"},
		{rawRequest{method: http.MethodPost, path: "/_granary/warm", query: "bucket=" + bucket + "&metadata-only=maybe"}, "InvalidArgument"},
		{rawRequest{method: http.MethodGet, path: "/_granary/warm", query: "id=w999"}, "NoSuchKey"},
		{rawRequest{method: http.MethodDelete, path: "/_granary/warm", query: "id=w999"}, "NoSuchKey"},
		{rawRequest{method: http.MethodPut, path: "/_granary/warm"}, "InvalidRequest"},
		{rawRequest{method: http.MethodGet, path: "/_granary/status", query: "bucket=no-such-bucket-x"}, "NoSuchBucket"},
	} {
		resp, body := e.do(t, c.rr)
		if got := errorCode(t, body); resp.StatusCode < 400 || got != c.code {
			t.Errorf("%s %s?%s: %d %s, want %s", c.rr.method, c.rr.path, c.rr.query, resp.StatusCode, got, c.code)
		}
	}
}

func TestAdminWarmWithoutCatalog(t *testing.T) {
	base, root := openS3(t)
	e := newEnvOver(t, gateway.Options{Origin: base}, root, nil)
	bucket := e.makeBucket(t, "nocat")
	resp, body := e.do(t, rawRequest{method: http.MethodPost, path: "/_granary/warm", query: "bucket=" + bucket})
	if got := errorCode(t, body); resp.StatusCode != http.StatusNotImplemented || got != "NotImplemented" {
		t.Fatalf("warm-up without a catalog: %d %s", resp.StatusCode, body)
	}
}
