// The router through the real door: each path reaches the face that
// claims it, and a face left out claims nothing (but for the peer face,
// whose calls a node outside a cluster refuses).
package api

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/granary-dev/granary/gateway"
)

func TestFacesRouteByPath(t *testing.T) {
	e := newEnv(t, backends[0])
	cases := []struct {
		name   string
		rr     rawRequest
		status int
		code   string // the S3 error code, "" for an answer that is not one
		body   string // a piece of the body
	}{
		{"console", rawRequest{method: http.MethodGet, path: "/_granary/console/", unsigned: true}, 200, "", "<html"},
		{"healthz", rawRequest{method: http.MethodGet, path: "/healthz", unsigned: true}, 200, "", "ok"},
		{"signed healthz is S3", rawRequest{method: http.MethodGet, path: "/healthz"}, 404, "NoSuchBucket", ""},
		{"peer call without a cluster", rawRequest{method: http.MethodGet, path: "/_granary/peer/ping", unsigned: true},
			403, "AccessDenied", "this node is not in a cluster"},
		{"admin API", rawRequest{method: http.MethodGet, path: "/_granary/nothing"},
			400, "InvalidRequest", "unknown admin call GET /_granary/nothing"},
		{"unsigned admin API", rawRequest{method: http.MethodGet, path: "/_granary/status", unsigned: true}, 403, "AccessDenied", ""},
		{"S3", rawRequest{method: http.MethodGet, path: "/"}, 200, "", "ListAllMyBucketsResult"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := e.do(t, tc.rr)
			if tc.code != "" {
				expectError(t, resp, body, tc.status, tc.code)
			} else if resp.StatusCode != tc.status {
				t.Errorf("status = %d, want %d (body %q)", resp.StatusCode, tc.status, body)
			}
			if !strings.Contains(string(body), tc.body) {
				t.Errorf("body %q lacks %q", body, tc.body)
			}
		})
	}
}

// TestS3FaceAlone: a server given only the S3 face answers every path as
// S3 (here, unsigned: refused), except peer calls.
func TestS3FaceAlone(t *testing.T) {
	origin, _ := openFS(t)
	eng, err := gateway.New(gateway.Options{Origin: origin})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	s3, err := NewS3(S3Options{Engine: eng, Access: accessForTest()})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{}, Faces{S3: s3})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	e := &env{srv: srv, eng: eng, addr: ln.Addr().String()}
	for _, p := range []string{"/healthz", "/_granary/console/", "/_granary/status"} {
		resp, body := e.do(t, rawRequest{method: http.MethodGet, path: p, unsigned: true})
		expectError(t, resp, body, http.StatusForbidden, "AccessDenied")
	}
	resp, body := e.do(t, rawRequest{method: http.MethodGet, path: "/_granary/peer/ping", unsigned: true})
	expectError(t, resp, body, http.StatusForbidden, "AccessDenied")
	if !strings.Contains(string(body), "this node is not in a cluster") {
		t.Errorf("peer call answered %q", body)
	}
}

// TestFacesNeedTheirParts: a face missing a required part is an error,
// not a nil dereference at the first request.
func TestFacesNeedTheirParts(t *testing.T) {
	if _, err := New(Options{}, Faces{}); err == nil {
		t.Error("a server without the S3 face was built")
	}
	if _, err := NewS3(S3Options{}); err == nil {
		t.Error("an S3 face without an engine was built")
	}
	if _, err := NewAdmin(AdminOptions{}); err == nil {
		t.Error("an admin face without its parts was built")
	}
	if _, err := NewMonitor(MonitorOptions{}); err == nil {
		t.Error("a monitor without an engine was built")
	}
	if _, err := NewPeer(PeerOptions{}); err == nil {
		t.Error("a peer face without an engine was built")
	}
}
