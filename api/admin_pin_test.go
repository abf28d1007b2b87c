// Pins through the signed admin API: pin, list, unpin, and the refusals.
package api

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/granary-dev/granary/gateway"
	"github.com/granary-dev/granary/store/pins"
)

func TestAdminPin(t *testing.T) {
	base, root := openFS(t)
	if err := os.Mkdir(filepath.Join(root, "data"), 0o755); err != nil { // the bucket pinned
		t.Fatal(err)
	}
	set, err := pins.Open(map[string][]string{"fixed": {"x/"}}, filepath.Join(t.TempDir(), "pins.json"))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvOver(t, gateway.Options{Origin: base, Pins: set}, root, nil)
	list := func(rr rawRequest) []pins.Pin {
		t.Helper()
		resp, body := e.do(t, rr)
		var out []pins.Pin
		if resp.StatusCode != 200 || json.Unmarshal(body, &out) != nil {
			t.Fatalf("%s ?%s: %d %s", rr.method, rr.query, resp.StatusCode, body)
		}
		return out
	}
	got := list(rawRequest{method: http.MethodPost, path: "/_granary/pin", query: "bucket=data&prefix=train%2F"})
	if len(got) != 2 || got[0] != (pins.Pin{Bucket: "data", Prefix: "train/"}) || !got[1].Configured {
		t.Fatalf("after pinning: %+v", got)
	}
	if !set.Pinned("data", "train/1.jpg") {
		t.Fatal("the pin is not in effect")
	}
	if got := list(rawRequest{method: http.MethodGet, path: "/_granary/pin"}); len(got) != 2 {
		t.Fatalf("list: %+v", got)
	}
	if got := list(rawRequest{method: http.MethodDelete, path: "/_granary/pin", query: "bucket=data&prefix=train%2F"}); len(got) != 1 {
		t.Fatalf("after unpinning: %+v", got)
	}
	for _, c := range []struct {
		rr   rawRequest
		code string
	}{
		{rawRequest{method: http.MethodDelete, path: "/_granary/pin", query: "bucket=data&prefix=train%2F"}, "NoSuchKey"},
		{rawRequest{method: http.MethodDelete, path: "/_granary/pin", query: "bucket=fixed&prefix=x%2F"}, "InvalidRequest"},
		{rawRequest{method: http.MethodPost, path: "/_granary/pin", query: "bucket=Bad_Name"}, "InvalidBucketName"},
		{rawRequest{method: http.MethodPost, path: "/_granary/pin", query: "bucket=no-such-bucket&prefix=x%2F"}, "NoSuchBucket"},
		{rawRequest{method: http.MethodPost, path: "/_granary/pin", query: "bucket=data", unsigned: true}, "AccessDenied"},
		{rawRequest{method: http.MethodPut, path: "/_granary/pin"}, "InvalidRequest"},
	} {
		resp, body := e.do(t, c.rr)
		if got := errorCode(t, body); resp.StatusCode < 400 || got != c.code {
			t.Errorf("%s %s?%s: %d %s, want %s", c.rr.method, c.rr.path, c.rr.query, resp.StatusCode, got, c.code)
		}
	}
	e2 := newEnvOver(t, gateway.Options{Origin: base}, root, nil)
	resp, body := e2.do(t, rawRequest{method: http.MethodGet, path: "/_granary/pin"})
	if got := errorCode(t, body); resp.StatusCode != http.StatusNotImplemented || got != "NotImplemented" {
		t.Fatalf("pins on a node without a pin set: %d %s", resp.StatusCode, body)
	}
}
