// The object browser's calls: a listing page with what the tiers hold of
// each object, pagination, eviction and its refusals; and a browser's
// visit of / sent to the console while S3 clients still get S3.
package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/granary-dev/granary/gateway"
	"github.com/granary-dev/granary/store/ram"
)

func TestAdminObjectsAndEvict(t *testing.T) {
	base, root := openFS(t)
	e := newEnvOver(t, gateway.Options{Origin: base, RAM: ram.New(ram.Options{Capacity: 64 << 20})}, root, nil)
	bucket := e.makeBucket(t, "browse")
	body := randomBytes(3000)
	for i := range 3 {
		e.put(t, bucket, fmt.Sprintf("dir/obj-%d", i), body, minio.PutObjectOptions{})
	}
	e.put(t, bucket, "sub/deeper/x", body, minio.PutObjectOptions{})
	page := func(query string) ObjectsPage {
		t.Helper()
		resp, b := e.do(t, rawRequest{method: http.MethodGet, path: "/_granary/objects", query: query})
		var p ObjectsPage
		if resp.StatusCode != 200 || json.Unmarshal(b, &p) != nil {
			t.Fatalf("objects ?%s: %d %s", query, resp.StatusCode, b)
		}
		return p
	}
	top := page("bucket=" + bucket + "&delimiter=%2F")
	if len(top.Objects) != 0 || len(top.Prefixes) != 2 || top.Prefixes[0] != "dir/" || top.Prefixes[1] != "sub/" || top.Truncated {
		t.Fatalf("top level: %+v", top)
	}
	first := page("bucket=" + bucket + "&prefix=dir%2F&delimiter=%2F&max-keys=2")
	if len(first.Objects) != 2 || !first.Truncated || first.NextAfter == "" {
		t.Fatalf("first page: %+v", first)
	}
	held := first.Objects[1]
	if held.Key != "dir/obj-1" || held.Size != int64(len(body)) || held.Held != held.Size || held.HeldByTier["ram"] != held.Size {
		t.Fatalf("an object written through: %+v", held)
	}
	second := page("bucket=" + bucket + "&prefix=dir%2F&delimiter=%2F&max-keys=2&after=" + first.NextAfter)
	if len(second.Objects) != 1 || second.Objects[0].Key != "dir/obj-2" || second.Truncated {
		t.Fatalf("second page: %+v", second)
	}

	resp, b := e.do(t, rawRequest{method: http.MethodPost, path: "/_granary/evict", query: "bucket=" + bucket + "&key=dir%2Fobj-1"})
	if resp.StatusCode != 200 {
		t.Fatalf("evict: %d %s", resp.StatusCode, b)
	}
	if after := page("bucket=" + bucket + "&prefix=dir%2F&max-keys=2"); after.Objects[1].Held != 0 || after.Objects[0].Held != int64(len(body)) {
		t.Fatalf("after evicting dir/obj-1: %+v", after.Objects)
	}
	if got, err := e.get(t, bucket, "dir/obj-1", minio.GetObjectOptions{}); err != nil || string(got) != string(body) {
		t.Fatalf("reading the evicted object: %v", err)
	}

	for _, c := range []struct {
		rr   rawRequest
		code string
	}{
		{rawRequest{method: http.MethodGet, path: "/_granary/objects"}, "InvalidBucketName"},
		{rawRequest{method: http.MethodGet, path: "/_granary/objects", query: "bucket=" + bucket + "&max-keys=0"}, "InvalidArgument"},
		{rawRequest{method: http.MethodGet, path: "/_granary/objects", query: "bucket=no-such-bucket"}, "NoSuchBucket"},
		{rawRequest{method: http.MethodGet, path: "/_granary/objects", query: "bucket=" + bucket, unsigned: true}, "AccessDenied"},
		{rawRequest{method: http.MethodPost, path: "/_granary/evict", query: "bucket=" + bucket}, "InvalidArgument"},
		{rawRequest{method: http.MethodPost, path: "/_granary/evict", query: "bucket=" + bucket + "&key=x", unsigned: true}, "AccessDenied"},
		{rawRequest{method: http.MethodGet, path: "/_granary/evict", query: "bucket=" + bucket + "&key=x"}, "InvalidRequest"},
	} {
		resp, body := e.do(t, c.rr)
		if got := errorCode(t, body); resp.StatusCode < 400 || got != c.code {
			t.Errorf("%s %s?%s: %d %s, want %s", c.rr.method, c.rr.path, c.rr.query, resp.StatusCode, got, c.code)
		}
	}
}

// A write-back object not yet at the origin is not evicted: the cache
// holds what its upload sends.
func TestAdminEvictPending(t *testing.T) {
	base, root := openFS(t)
	po := pendingOrigin{Origin: base, pending: "pending/x"}
	e := newEnvOver(t, gateway.Options{Origin: po, Staging: po}, root, nil)
	bucket := e.makeBucket(t, "evict-pending")
	resp, body := e.do(t, rawRequest{method: http.MethodPost, path: "/_granary/evict", query: "bucket=" + bucket + "&key=pending%2Fx"})
	if got := errorCode(t, body); resp.StatusCode != 400 || got != "InvalidRequest" {
		t.Fatalf("evicting a pending object: %d %s", resp.StatusCode, body)
	}
}

// A browser opening the node's address is sent to the console; an S3
// client's unsigned GET / (no Accept: text/html) still gets S3's answer.
func TestBrowserVisitRedirects(t *testing.T) {
	base, root := openFS(t)
	e := newEnvOver(t, gateway.Options{Origin: base}, root, nil)
	html := http.Header{"Accept": {"text/html,application/xhtml+xml,*/*;q=0.8"}}
	resp, _ := e.do(t, rawRequest{method: http.MethodGet, path: "/", header: html, unsigned: true})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/_granary/console/" {
		t.Fatalf("a browser's GET /: %d %v", resp.StatusCode, resp.Header)
	}
	for _, rr := range []rawRequest{
		{method: http.MethodGet, path: "/", unsigned: true},
		{method: http.MethodGet, path: "/", unsigned: true, header: http.Header{"Accept": {"*/*"}}},
		{method: http.MethodGet, path: "/", unsigned: true, header: html, query: "x-id=ListBuckets"},
	} {
		resp, body := e.do(t, rr)
		if got := errorCode(t, body); resp.StatusCode != http.StatusForbidden || got != "AccessDenied" {
			t.Errorf("unsigned GET /?%s %v: %d %s", rr.query, rr.header, resp.StatusCode, body)
		}
	}
	resp, body := e.do(t, rawRequest{method: http.MethodGet, path: "/", header: html})
	if resp.StatusCode != 200 || errorCode(t, body) != "" {
		t.Fatalf("a signed ListBuckets asking for HTML: %d %s", resp.StatusCode, body)
	}
}
