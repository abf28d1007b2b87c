// Warm-ups through a real node: `granary warm` loads a prefix, the origin
// goes away, and every object and listing under the prefix is still
// served; `granary status` reports it cached; a scheduled warm-up runs.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/granary-dev/granary/internal/miniotest"
	"github.com/granary-dev/granary/internal/slowproxy"
	"github.com/granary-dev/granary/ops"
)

// warmNode starts MinIO, a proxy to it and a node in front of the proxy,
// and seeds bucket "dset" with n objects under "train/" and one under
// "val/".
func warmNode(t *testing.T, n int, extra ...string) (*child, *slowproxy.Proxy, map[string]string, map[string][]byte) {
	mio := miniotest.StartT(t)
	proxy, err := slowproxy.Start(mio.Endpoint, slowproxy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	direct := directClient(t, mio)
	ctx := context.Background()
	if err := direct.MakeBucket(ctx, "dset", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	objs := map[string][]byte{"val/0": []byte("validation")}
	for i := range n {
		objs[fmt.Sprintf("train/c%d/%03d.jpg", i%4, i)] = bytes.Repeat([]byte{byte(i)}, 1000+i*997)
	}
	for k, v := range objs {
		if _, err := direct.PutObject(ctx, "dset", k, bytes.NewReader(v), int64(len(v)), minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{
		"GRANARY_ACCESS_KEY": "warm-access", "GRANARY_SECRET_KEY": "warm-secret",
		"GRANARY_ORIGIN_ACCESS_KEY": mio.AccessKey, "GRANARY_ORIGIN_SECRET_KEY": mio.SecretKey,
		"GRANARY_DATA_DIR": t.TempDir(), "GRANARY_LOG_LEVEL": "warn",
	}
	args := append([]string{"--origin", "s3://" + proxy.Addr() + "?secure=false", "--ram", "64MiB", "--disk", "64MiB"}, extra...)
	return startChild(t, env, args...), proxy, env, objs
}

func TestWarmCommandThenOriginDown(t *testing.T) {
	node, proxy, env, objs := warmNode(t, 40)
	endpoint := "http://" + node.addr
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out bytes.Buffer
	code := execute(ctx, []string{"warm", "--endpoint", endpoint, "--parallel", "4", "s3://dset/train/"}, &out, &out, envMap(env))
	if code != exitOK || !strings.Contains(out.String(), "done") || !strings.Contains(out.String(), "40 objects listed") {
		t.Fatalf("warm: exit %d\n%s\n%s", code, out.String(), node.stderr.String())
	}
	proxy.Close() // the origin is gone
	cl := nodeClient(t, env, node.addr)
	for k, v := range objs {
		if !strings.HasPrefix(k, "train/") {
			continue
		}
		if got := getAll(t, cl, "dset", k); !bytes.Equal(got, v) {
			t.Fatalf("%s with the origin down: %d bytes, want %d", k, len(got), len(v))
		}
	}
	for _, v1 := range []bool{false, true} {
		n := 0
		for o := range cl.ListObjectsIter(ctx, "dset", minio.ListObjectsOptions{Prefix: "train/", Recursive: true, MaxKeys: 7, UseV1: v1}) {
			if o.Err != nil {
				t.Fatalf("listing (v1 %v) with the origin down: %v", v1, o.Err)
			}
			n++
		}
		if n != 40 {
			t.Fatalf("listing (v1 %v) with the origin down: %d keys, want 40", v1, n)
		}
	}
	out.Reset()
	code = execute(ctx, []string{"status", "--endpoint", endpoint, "--json", "s3://dset/train/"}, &out, &out, envMap(env))
	var st ops.Status
	if code != exitOK || json.Unmarshal(out.Bytes(), &st) != nil || len(st.Buckets) != 1 {
		t.Fatalf("status: exit %d\n%s", code, out.String())
	}
	if b := st.Buckets[0]; b.Objects != 40 || b.CachedPercent < 99.9 || len(b.Covered) != 1 || b.Covered[0].Prefix != "train/" {
		t.Fatalf("status of the warmed prefix: %+v", b)
	}
	out.Reset()
	if code = execute(ctx, []string{"status", "--endpoint", endpoint}, &out, &out, envMap(env)); code != exitOK ||
		!strings.Contains(out.String(), "dset") || !strings.Contains(out.String(), "100.0%") {
		t.Fatalf("status table: exit %d\n%s", code, out.String())
	}
}

func TestWarmCommandErrors(t *testing.T) {
	node, proxy, env, _ := warmNode(t, 3)
	endpoint := "http://" + node.addr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"warm", "--endpoint", endpoint, "s3://nosuchbucket/x/"}, exitFailure, "NoSuchBucket"},
		{[]string{"warm", "--endpoint", endpoint, "ds/train/"}, exitUsage, "s3://"},
		{[]string{"warm", "--endpoint", endpoint, "--parallel", "0", "s3://dset/"}, exitUsage, "--parallel"},
		{[]string{"status", "--endpoint", endpoint, "s3://nosuchbucket/"}, exitFailure, "NoSuchBucket"},
	} {
		var out bytes.Buffer
		if code := execute(ctx, c.args, &out, &out, envMap(env)); code != c.code || !strings.Contains(out.String(), c.says) {
			t.Errorf("%q: exit %d, want %d with %q:\n%s", c.args, code, c.code, c.says, out.String())
		}
	}
	proxy.Close()
	var out bytes.Buffer
	if code := execute(ctx, []string{"warm", "--endpoint", endpoint, "s3://dset/train/"}, &out, &out, envMap(env)); code != exitFailure ||
		!strings.Contains(out.String(), "503") {
		t.Errorf("warm with the origin down: exit %d:\n%s", code, out.String())
	}
}

func TestScheduledWarmRunsInServe(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "granary.yaml")
	yaml := "buckets:\n  dset:\n    warm:\n      - prefix: train/\n        schedule: \"@every 1s\"\n        metadata-only: true\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	node, _, env, _ := warmNode(t, 5, "--config", cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var out bytes.Buffer
		code := execute(ctx, []string{"status", "--endpoint", "http://" + node.addr, "--json", "s3://dset/"}, &out, &out, envMap(env))
		var st ops.Status
		if code == exitOK && json.Unmarshal(out.Bytes(), &st) == nil && len(st.Warm) > 0 &&
			st.Warm[0].State == ops.WarmDone && st.Buckets[0].Objects == 5 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no scheduled warm-up done within 20s:\n%s\n%s", out.String(), node.stderr.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}
