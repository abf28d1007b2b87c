// A node whose origin hangs, through the real door: cached objects are
// served with their bytes, misses get 503 SlowDown with Retry-After once
// the breaker is open, and /readyz answers as --serve-stale-when-down says.
package api

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/rs/zerolog"

	"github.com/granary-dev/granary/gateway"
	"github.com/granary-dev/granary/internal/faultproxy"
	"github.com/granary-dev/granary/internal/poll"
	"github.com/granary-dev/granary/store/origin/guard"
	"github.com/granary-dev/granary/store/origin/s3"
	"github.com/granary-dev/granary/store/ram"
)

const faultTimeout = 300 * time.Millisecond

// newFaultEnv serves an engine over MinIO reached through a fault proxy,
// guarded as a node guards its origin.
func newFaultEnv(t *testing.T, opts ...envOption) (*env, *faultproxy.Proxy, *guard.Guard) {
	t.Helper()
	m := sharedMinIO(t)
	p, err := faultproxy.Start(m.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	inner, err := s3.New(s3.Options{Endpoint: p.Addr(), Region: testRegion, AccessKey: m.AccessKey, SecretKey: m.SecretKey,
		DialTimeout: faultTimeout, ResponseHeaderTimeout: faultTimeout, MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	g, err := guard.New(guard.Options{Origin: inner, Timeout: faultTimeout, ProbeInterval: 50 * time.Millisecond, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	e := newEnvOver(t, gateway.Options{Origin: g.Origin(), RAM: ram.New(ram.Options{Capacity: 64 << 20}),
		Freshness: gateway.Freshness{Mode: gateway.TTL, TTL: time.Millisecond}, OriginTimeout: faultTimeout, Health: g}, "", nil, opts...)
	return e, p, g
}

func TestHungOriginThroughTheDoor(t *testing.T) {
	e, p, g := newFaultEnv(t)
	bucket := e.makeBucket(t, "hung")
	data := randomBytes(300 << 10)
	e.put(t, bucket, "cached", data, minio.PutObjectOptions{})
	if got, err := e.get(t, bucket, "cached", minio.GetObjectOptions{}); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("warm read: %d bytes, %v", len(got), err)
	}
	if resp, body := e.do(t, rawRequest{method: http.MethodGet, path: "/readyz", unsigned: true}); resp.StatusCode != 200 {
		t.Fatalf("readyz with the origin up: %d %q", resp.StatusCode, body)
	}
	if err := p.Set(faultproxy.Hang); err != nil {
		t.Fatal(err)
	}
	// Past its 1 ms TTL on every read: served from the cache, revalidated
	// in the background until the breaker opens.
	for i := range 10 {
		start := time.Now()
		got, err := e.get(t, bucket, "cached", minio.GetObjectOptions{})
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("cached read %d with the origin hung: %d bytes, %v", i, len(got), err)
		}
		if d := time.Since(start); d > 10*faultTimeout {
			t.Fatalf("cached read %d took %v", i, d)
		}
	}
	// Misses wait for the hung origin, each a bounded time, until the
	// breaker opens (3 timeouts in a row); then they fail at once.
	var resp *http.Response
	var body []byte
	for i := 0; g.Health().Up(); i++ {
		if i == 10 {
			t.Fatalf("10 misses of a hung origin and the breaker is still closed: %+v", g.Health())
		}
		start := time.Now()
		resp, body = e.do(t, rawRequest{method: http.MethodGet, path: "/" + bucket + "/never-cached"})
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("a miss of a hung origin: %d %s", resp.StatusCode, body)
		}
		if d := time.Since(start); d > 10*faultTimeout {
			t.Fatalf("a miss of a hung origin took %v", d)
		}
	}
	start := time.Now()
	resp, body = e.do(t, rawRequest{method: http.MethodGet, path: "/" + bucket + "/never-cached"})
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "<Code>SlowDown</Code>") ||
		resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a miss with the breaker open: %d, Retry-After %q, %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if d := time.Since(start); d > 10*faultTimeout {
		t.Fatalf("the SlowDown took %v", d)
	}
	if got, err := e.get(t, bucket, "cached", minio.GetObjectOptions{}); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("cached read with the breaker open: %d bytes, %v", len(got), err)
	}
	resp, body = e.do(t, rawRequest{method: http.MethodGet, path: "/readyz", unsigned: true})
	if resp.StatusCode != 200 || !strings.Contains(string(body), "origin down (timeout)") {
		t.Fatalf("readyz serving stale, origin down: %d %q", resp.StatusCode, body)
	}
	if resp, body := e.do(t, rawRequest{method: http.MethodGet, path: "/healthz", unsigned: true}); resp.StatusCode != 200 {
		t.Fatalf("healthz with the origin down: %d %q", resp.StatusCode, body)
	}
	// A write-through PUT fails at once with the same clear answer.
	resp, body = e.do(t, rawRequest{method: http.MethodPut, path: "/" + bucket + "/new", body: []byte("x")})
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "<Code>SlowDown</Code>") {
		t.Fatalf("a write-through PUT with the breaker open: %d %s", resp.StatusCode, body)
	}
	if err := p.Set(faultproxy.Forward); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the origin to be back", func() bool { return g.Health().Up() })
	if resp, body := e.do(t, rawRequest{method: http.MethodGet, path: "/readyz", unsigned: true}); resp.StatusCode != 200 || string(body) != "ready" {
		t.Fatalf("readyz with the origin back: %d %q", resp.StatusCode, body)
	}
}

// TestReadyNeedsOrigin: with --serve-stale-when-down=false, /readyz is
// 503 while the origin is down, and 200 again once it is back.
func TestReadyNeedsOrigin(t *testing.T) {
	e, p, g := newFaultEnv(t, func(o *nodeOptions) { o.ReadyNeedsOrigin = true })
	if err := p.Set(faultproxy.Refuse); err != nil {
		t.Fatal(err)
	}
	if err := g.Check(t.Context()); err == nil {
		t.Fatal("check of a refused origin passed")
	}
	resp, body := e.do(t, rawRequest{method: http.MethodGet, path: "/readyz", unsigned: true})
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "origin down (refused)") {
		t.Fatalf("readyz with the origin refusing: %d %q", resp.StatusCode, body)
	}
	if err := p.Set(faultproxy.Forward); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "readyz to be 200 again", func() bool {
		resp, _ := e.do(t, rawRequest{method: http.MethodGet, path: "/readyz", unsigned: true})
		return resp.StatusCode == 200
	})
}
