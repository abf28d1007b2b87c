// A node whose origin is sick, as an operator meets it: the start-up check
// names the cause (and --require-origin makes it fatal), `granary status`
// shows the origin's state, /readyz follows --serve-stale-when-down, and
// write-back data accepted while the origin hangs reaches it once it is
// back.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"go.yaml.in/yaml/v3"

	"github.com/granary-dev/granary/internal/faultproxy"
	"github.com/granary-dev/granary/internal/miniotest"
	"github.com/granary-dev/granary/internal/poll"
	"github.com/granary-dev/granary/ops"
)

// refusedOrigin is an s3 origin URL on a loopback port nothing listens on.
func refusedOrigin(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "s3://" + addr + "?secure=false"
}

func TestRequireOriginFailsAtStart(t *testing.T) {
	var out, errb bytes.Buffer
	code := execute(context.Background(), []string{"serve", "--listen", "127.0.0.1:0", "--origin", refusedOrigin(t),
		"--origin-timeout", "2s", "--require-origin"}, &out, &errb, envMap(map[string]string{"GRANARY_DATA_DIR": t.TempDir()}))
	if code != exitFailure || !strings.Contains(errb.String(), "--require-origin") || !strings.Contains(errb.String(), "refused") {
		t.Fatalf("serve --require-origin with a refused origin: exit %d, want %d naming the cause:\n%s", code, exitFailure, errb.String())
	}
}

func TestOriginDownAtStartIsReported(t *testing.T) {
	env := map[string]string{"GRANARY_DATA_DIR": t.TempDir(), "GRANARY_ACCESS_KEY": "od-access", "GRANARY_SECRET_KEY": "od-secret-key"}
	s := startServe(t, env, "--origin", refusedOrigin(t), "--origin-timeout", "2s")
	if n := strings.Count(s.stderr.String(), `"message":"origin down: refused`); n != 1 {
		t.Fatalf("%d start-up lines naming the cause, want 1:\n%s", n, s.stderr.String())
	}
	// Requests during the outage say nothing more: no line per request.
	// One attempt each: minio-go would retry a 503 with backoff.
	cl, err := minio.New(s.addr, &minio.Options{MaxRetries: 1, Region: "us-east-1",
		Creds: credentials.NewStaticV4(env["GRANARY_ACCESS_KEY"], env["GRANARY_SECRET_KEY"], "")})
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		_, err := cl.StatObject(context.Background(), "data", "k", minio.StatObjectOptions{})
		if resp := minio.ToErrorResponse(err); resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("a miss with the origin down: %v, want 503", err)
		}
	}
	if n := strings.Count(s.stderr.String(), `"level":"error"`); n != 1 {
		t.Fatalf("%d error lines after 20 refused requests, want the 1 that says the origin is down:\n%s", n, s.stderr.String())
	}
	if body := httpGet(t, "http://"+s.addr+"/readyz"); !strings.Contains(body, "origin down (refused)") {
		t.Fatalf("readyz: %q", body)
	}
	var out bytes.Buffer
	if code := execute(context.Background(), []string{"status", "--json", "--endpoint", "http://" + s.addr}, &out, &out, envMap(env)); code != exitOK {
		t.Fatalf("status --json: exit %d\n%s", code, out.String())
	}
	var st ops.Status
	if err := json.Unmarshal(out.Bytes(), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out.String())
	}
	if o := st.Origin; o == nil || o.State != "down" || o.Cause != "refused" || o.Breaker != "open" || o.LastError == "" {
		t.Fatalf("status --json origin: %+v", st.Origin)
	}
	out.Reset()
	if code := execute(context.Background(), []string{"status", "--endpoint", "http://" + s.addr}, &out, &out, envMap(env)); code != exitOK {
		t.Fatalf("status: exit %d\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), ": down since ") || !strings.Contains(out.String(), "last error (refused)") {
		t.Fatalf("status does not show the origin down:\n%s", out.String())
	}
	metrics := httpGet(t, "http://"+s.addr+"/metrics")
	for _, want := range []string{"granary_origin_up 0", "granary_origin_breaker_open 1", `granary_origin_unreachable_total{cause="refused"}`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

func TestReadyzNeedsOriginWhenAsked(t *testing.T) {
	env := map[string]string{"GRANARY_DATA_DIR": t.TempDir(), "GRANARY_ACCESS_KEY": "od-access", "GRANARY_SECRET_KEY": "od-secret-key"}
	s := startServe(t, env, "--origin", refusedOrigin(t), "--origin-timeout", "2s", "--serve-stale-when-down=false")
	resp, err := http.Get("http://" + s.addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("readyz with the origin down and --serve-stale-when-down=false: %d, want 503", resp.StatusCode)
	}
}

// TestWriteBackWaitsOutAHungOrigin: objects acknowledged in write-back
// mode while the origin hangs stay readable, and reach the origin once it
// answers again.
func TestWriteBackWaitsOutAHungOrigin(t *testing.T) {
	mio := miniotest.StartT(t)
	p, err := faultproxy.Start(mio.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	env := map[string]string{
		"GRANARY_ACCESS_KEY": "wb-access", "GRANARY_SECRET_KEY": "wb-secret",
		"GRANARY_ORIGIN_ACCESS_KEY": mio.AccessKey, "GRANARY_ORIGIN_SECRET_KEY": mio.SecretKey,
		"GRANARY_DATA_DIR": t.TempDir(), "GRANARY_LOG_LEVEL": "warn",
	}
	s := startServe(t, env, "--origin", "s3://"+p.Addr()+"?secure=false", "--origin-timeout", "1s",
		"--write-mode", "write-back", "--ram", "64MiB", "--disk", "64MiB")
	cl := nodeClient(t, env, s.addr)
	ctx := context.Background()
	if err := cl.MakeBucket(ctx, "ckpt", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := p.Set(faultproxy.Hang); err != nil {
		t.Fatal(err)
	}
	data := map[string][]byte{"a": bytes.Repeat([]byte("A"), 3<<20), "b": bytes.Repeat([]byte("B"), 100<<10)}
	for key, body := range data {
		start := time.Now()
		if _, err := cl.PutObject(ctx, "ckpt", key, bytes.NewReader(body), int64(len(body)), minio.PutObjectOptions{}); err != nil {
			t.Fatalf("write-back put with the origin hung: %v", err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("a write-back put waited %v for a hung origin", d)
		}
		if got := getAll(t, cl, "ckpt", key); !bytes.Equal(got, body) {
			t.Fatalf("%s reads back wrong while the origin hangs", key)
		}
	}
	if err := p.Set(faultproxy.Forward); err != nil {
		t.Fatal(err)
	}
	direct := directClient(t, mio)
	deadline := time.Now().Add(3 * time.Minute) // the log's retry backoff tops out at a minute
	for key, body := range data {
		for {
			if _, err := direct.StatObject(ctx, "ckpt", key, minio.StatObjectOptions{}); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never reached the origin after it came back:\n%s", key, s.stderr.String())
			}
			time.Sleep(200 * time.Millisecond)
		}
		if got := getAll(t, direct, "ckpt", key); !bytes.Equal(got, body) {
			t.Fatalf("%s differs at the origin", key)
		}
	}
}

func TestBucketServeStale(t *testing.T) {
	var cfg Config
	raw := "freshness: always\nbuckets:\n  strict:\n    serve-stale: false\n  lenient:\n    serve-stale: true\n"
	if err := yaml.Unmarshal([]byte(raw), &cfg); err != nil {
		t.Fatal(err)
	}
	_, buckets, err := cfg.Freshnesses()
	if err != nil {
		t.Fatal(err)
	}
	if !buckets["strict"].NoStale || buckets["lenient"].NoStale {
		t.Fatalf("serve-stale per bucket: %+v", buckets)
	}
}

// TestReadyzNoticesAnOriginDeadWhileIdle: with --serve-stale-when-down=false
// and no client at all, /readyz turns 503 once the node's MinIO is killed
// (the guard's idle probe finds it gone, where before only three client
// misses did) and 200 again once MinIO is back.
func TestReadyzNoticesAnOriginDeadWhileIdle(t *testing.T) {
	mio := miniotest.StartT(t)
	env := map[string]string{
		"GRANARY_ACCESS_KEY": "idle-access", "GRANARY_SECRET_KEY": "idle-secret",
		"GRANARY_ORIGIN_ACCESS_KEY": mio.AccessKey, "GRANARY_ORIGIN_SECRET_KEY": mio.SecretKey,
		"GRANARY_DATA_DIR": t.TempDir(), "GRANARY_LOG_LEVEL": "warn",
	}
	s := startServe(t, env, "--origin", "s3://"+mio.Endpoint+"?secure=false", "--origin-timeout", "1s",
		"--origin-idle-probe", "200ms", "--serve-stale-when-down=false")
	readyz := func() int {
		resp, err := http.Get("http://" + s.addr + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// A MinIO just started may answer "not initialized" to the start-up
	// check a while.
	poll.Until(t, "readyz to be 200 with the origin up", func() bool { return readyz() == http.StatusOK })
	mio.Kill()
	poll.Until(t, "readyz to turn 503 with the origin killed and no client", func() bool {
		return readyz() == http.StatusServiceUnavailable
	})
	if err := mio.Restart(); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "readyz to turn 200 with the origin back", func() bool { return readyz() == http.StatusOK })
}
