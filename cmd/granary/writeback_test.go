// Write-back through a real node: a `granary serve` process acknowledges
// checkpoint shards, is killed with SIGKILL while it uploads them to a slow
// origin, and after a restart every acknowledged byte reaches the origin;
// meanwhile the disk cache, far smaller than the dirty data, evicts freely
// without touching it.
package main

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/granary-dev/granary/internal/miniotest"
	"github.com/granary-dev/granary/internal/slowproxy"
)

// shard is one object of the test checkpoint.
type shard struct {
	key  string
	data []byte
	etag string // as the node acknowledged it
}

func checkpointShards() []*shard {
	rng := rand.New(rand.NewPCG(1, 2))
	var out []*shard
	for i, size := range []int{6 << 20, 6 << 20, 6 << 20, 20 << 20} {
		b := make([]byte, size)
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		out = append(out, &shard{key: fmt.Sprintf("run-1/step-100/shard-%d", i), data: b})
	}
	return out
}

func TestWriteBackSurvivesKill(t *testing.T) {
	mio := miniotest.StartT(t)
	proxy, err := slowproxy.Start(mio.Endpoint, slowproxy.Options{Total: 4e6})
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	env := map[string]string{
		"GRANARY_ACCESS_KEY": "wb-access", "GRANARY_SECRET_KEY": "wb-secret",
		"GRANARY_ORIGIN_ACCESS_KEY": mio.AccessKey, "GRANARY_ORIGIN_SECRET_KEY": mio.SecretKey,
		"GRANARY_DATA_DIR": t.TempDir(), "GRANARY_LOG_LEVEL": "warn",
	}
	// 38 MiB of dirty data against a 16 MiB disk cache.
	node := startChild(t, env, "--origin", "s3://"+proxy.Addr()+"?secure=false",
		"--write-mode", "write-back", "--ram", "64MiB", "--disk", "16MiB", "--chunk-size", "4MiB")
	cl := nodeClient(t, env, node.addr)
	ctx := context.Background()
	if err := cl.MakeBucket(ctx, "ckpt", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	shards := checkpointShards()
	for _, s := range shards {
		info, err := cl.PutObject(ctx, "ckpt", s.key, bytes.NewReader(s.data), int64(len(s.data)),
			minio.PutObjectOptions{PartSize: 5 << 20})
		if err != nil {
			t.Fatalf("put %s: %v", s.key, err)
		}
		s.etag = info.ETag
	}
	// Every shard reads back at once, though the origin has few of them.
	for _, s := range shards {
		if got := getAll(t, cl, "ckpt", s.key); !bytes.Equal(got, s.data) {
			t.Fatalf("%s read back wrong before upload", s.key)
		}
	}
	if persisted(t, node.addr, env, "ckpt", shards[3].key) != "false" {
		t.Fatal("the last shard claims to be at the origin already")
	}
	waitForwarded(t, proxy, 2<<20)
	node.kill(t)

	direct := directClient(t, mio)
	missing := 0
	for _, s := range shards {
		if _, err := direct.StatObject(ctx, "ckpt", s.key, minio.StatObjectOptions{}); err != nil {
			missing++
		}
	}
	if missing == 0 {
		t.Fatal("every shard reached the origin before the kill: the test killed nothing in flight")
	}

	// Restart on the same data directory, straight in front of MinIO.
	node = startChild(t, env, "--origin", "s3://"+mio.Endpoint+"?secure=false",
		"--write-mode", "write-back", "--ram", "64MiB", "--disk", "16MiB", "--chunk-size", "4MiB")
	var out bytes.Buffer
	code := execute(ctx, []string{"flush", "--endpoint", "http://" + node.addr, "--timeout", "2m", "s3://ckpt/run-1/"},
		&out, &out, envMap(env))
	if code != exitOK || !strings.Contains(out.String(), "done") {
		t.Fatalf("flush: exit %d\n%s\n%s", code, out.String(), node.stderr.String())
	}
	for _, s := range shards {
		got := getAll(t, direct, "ckpt", s.key)
		if sha256.Sum256(got) != sha256.Sum256(s.data) {
			t.Fatalf("%s at the origin differs from what was acknowledged", s.key)
		}
		info, err := direct.StatObject(ctx, "ckpt", s.key, minio.StatObjectOptions{})
		if err != nil || info.ETag != s.etag {
			t.Errorf("%s: origin ETag %q, acknowledged %q (%v)", s.key, info.ETag, s.etag, err)
		}
		if p := persisted(t, node.addr, env, "ckpt", s.key); p != "true" {
			t.Errorf("%s: x-granary-persisted %q after flush", s.key, p)
		}
	}
	node.stop(t)
}

// TestWriteBackKeepsTheClientsETag: a checkpoint saved in a write-back
// bucket, one shard as one PUT larger than the origin's part size and one
// as a multipart upload, is at the origin under the ETags the client got
// (the MD5, the client's parts' ETag) once flushed; HEAD through the node
// says the same, GET with If-Match of it answers, and the restore is a
// cache hit, not a download.
func TestWriteBackKeepsTheClientsETag(t *testing.T) {
	mio := miniotest.StartT(t)
	env := map[string]string{
		"GRANARY_ACCESS_KEY": "wb-access", "GRANARY_SECRET_KEY": "wb-secret",
		"GRANARY_ORIGIN_ACCESS_KEY": mio.AccessKey, "GRANARY_ORIGIN_SECRET_KEY": mio.SecretKey,
		"GRANARY_DATA_DIR": t.TempDir(), "GRANARY_LOG_LEVEL": "warn",
	}
	node := startChild(t, env, "--origin", "s3://"+mio.Endpoint+"?secure=false",
		"--write-mode", "write-back", "--ram", "128MiB", "--disk", "128MiB", "--chunk-size", "4MiB")
	cl := nodeClient(t, env, node.addr)
	ctx := context.Background()
	if err := cl.MakeBucket(ctx, "ckpt", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	shards := checkpointShards() // the last is 20 MiB, over the origin's 16 MiB parts
	whole, multi := shards[3], shards[0]
	info, err := minio.Core{Client: cl}.PutObject(ctx, "ckpt", whole.key, bytes.NewReader(whole.data),
		int64(len(whole.data)), "", "", minio.PutObjectOptions{})
	if err != nil {
		t.Fatalf("put %s: %v", whole.key, err)
	}
	if sum := md5.Sum(whole.data); info.ETag != hex.EncodeToString(sum[:]) {
		t.Fatalf("PUT answered ETag %s, want the body's MD5", info.ETag)
	}
	whole.etag = info.ETag
	if info, err = cl.PutObject(ctx, "ckpt", multi.key, bytes.NewReader(multi.data), int64(len(multi.data)),
		minio.PutObjectOptions{PartSize: 5 << 20}); err != nil || !strings.HasSuffix(info.ETag, "-2") {
		t.Fatalf("multipart put %s: ETag %q, %v", multi.key, info.ETag, err)
	}
	multi.etag = info.ETag
	var out bytes.Buffer
	if code := execute(ctx, []string{"flush", "--endpoint", "http://" + node.addr, "--timeout", "2m", "s3://ckpt/run-1/"},
		&out, &out, envMap(env)); code != exitOK {
		t.Fatalf("flush: exit %d\n%s", code, out.String())
	}
	direct := directClient(t, mio)
	// The fills of the tiers behind the saves end; on a busy machine they
	// may outlast the uploads and read the rest from the origin.
	waitFor(t, 2*time.Minute, "the end of the cache fills", func() bool {
		return metric(t, node.addr, "granary_cache_fills_running") == 0
	})
	gets := metric(t, node.addr, "granary_origin_requests_total", `op="get"`)
	for _, s := range []*shard{whole, multi} {
		if st, err := direct.StatObject(ctx, "ckpt", s.key, minio.StatObjectOptions{}); err != nil || st.ETag != s.etag {
			t.Errorf("%s at the origin: ETag %q (%v), the client got %q", s.key, st.ETag, err, s.etag)
		}
		if st, err := cl.StatObject(ctx, "ckpt", s.key, minio.StatObjectOptions{}); err != nil || st.ETag != s.etag {
			t.Errorf("HEAD %s: ETag %q (%v), the client got %q", s.key, st.ETag, err, s.etag)
		}
		opts := minio.GetObjectOptions{}
		opts.SetMatchETag(s.etag)
		obj, err := cl.GetObject(ctx, "ckpt", s.key, opts)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(obj)
		obj.Close()
		if err != nil || !bytes.Equal(got, s.data) {
			t.Errorf("GET %s If-Match %s: %d bytes, %v", s.key, s.etag, len(got), err)
		}
	}
	if n := metric(t, node.addr, "granary_origin_requests_total", `op="get"`) - gets; n != 0 {
		t.Errorf("the restore after the flush read the origin %v times: the cached copy was dropped", n)
	}
	node.stop(t)
}

func nodeClient(t *testing.T, env map[string]string, addr string) *minio.Client {
	t.Helper()
	cf := clientFlags{endpoint: "http://" + addr}
	cl, err := cf.Client(envMap(env))
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

func directClient(t *testing.T, mio *miniotest.Server) *minio.Client {
	t.Helper()
	cl, err := newS3Client(mio.URL(), envMap(map[string]string{"GRANARY_ACCESS_KEY": mio.AccessKey, "GRANARY_SECRET_KEY": mio.SecretKey}))
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

func getAll(t *testing.T, cl *minio.Client, bucket, key string) []byte {
	t.Helper()
	obj, err := cl.GetObject(context.Background(), bucket, key, minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()
	b, err := io.ReadAll(obj)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	return b
}

// persisted returns the node's x-granary-persisted header for an object.
func persisted(t *testing.T, addr string, env map[string]string, bucket, key string) string {
	t.Helper()
	resp, err := adminCall(context.Background(), envMap(env), remote{url: "http://" + addr}, http.MethodHead, "/"+bucket+"/"+key, nil)
	if err != nil {
		t.Fatalf("head %s: %v", key, err)
	}
	resp.Body.Close()
	return resp.Header.Get("X-Granary-Persisted")
}

// waitForwarded waits (bounded) until the proxy carried n bytes upstream:
// the node is uploading.
func waitForwarded(t *testing.T, p *slowproxy.Proxy, n int64) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for up, _ := p.Forwarded(); up < n; up, _ = p.Forwarded() {
		if time.Now().After(deadline) {
			t.Fatalf("only %d bytes went to the origin in a minute", up)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestWriteBackOriginDown: with the origin unreachable, a write-back node
// accepts writes up to its dirty limit, then answers 503 SlowDown; what it
// accepted survives a restart and reaches the origin once it is back.
func TestWriteBackOriginDown(t *testing.T) {
	mio := miniotest.StartT(t)
	proxy, err := slowproxy.Start(mio.Endpoint, slowproxy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"GRANARY_ACCESS_KEY": "wb-access", "GRANARY_SECRET_KEY": "wb-secret",
		"GRANARY_ORIGIN_ACCESS_KEY": mio.AccessKey, "GRANARY_ORIGIN_SECRET_KEY": mio.SecretKey,
		"GRANARY_DATA_DIR": t.TempDir(), "GRANARY_LOG_LEVEL": "error",
	}
	args := []string{"--write-mode", "write-back", "--dirty-limit", "10MiB", "--ram", "64MiB", "--disk", "64MiB"}
	node := startChild(t, env, append([]string{"--origin", "s3://" + proxy.Addr() + "?secure=false"}, args...)...)
	cf := clientFlags{endpoint: "http://" + node.addr}
	cl, err := cf.Client(envMap(env))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := cl.MakeBucket(ctx, "ckpt", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	proxy.Close() // the origin is gone from here on
	core := minio.Core{Client: cl}
	a := bytes.Repeat([]byte("acknowledged"), 6<<20/12)
	if _, err := core.PutObject(ctx, "ckpt", "a", bytes.NewReader(a), int64(len(a)), "", "", minio.PutObjectOptions{}); err != nil {
		t.Fatalf("put within the dirty limit: %v", err)
	}
	// One attempt: minio-go retries a 503 by rewinding the body while its
	// HTTP transport may still be sending it (a race of the client's own).
	once, err := minio.New(node.addr, &minio.Options{MaxRetries: 1, Region: "us-east-1",
		Creds: credentials.NewStaticV4(env["GRANARY_ACCESS_KEY"], env["GRANARY_SECRET_KEY"], "")})
	if err != nil {
		t.Fatal(err)
	}
	b := bytes.Repeat([]byte("refused"), 6<<20/7)
	_, err = minio.Core{Client: once}.PutObject(ctx, "ckpt", "b", bytes.NewReader(b), int64(len(b)), "", "", minio.PutObjectOptions{})
	if resp := minio.ToErrorResponse(err); resp.StatusCode != http.StatusServiceUnavailable || resp.Code != "SlowDown" {
		t.Fatalf("put past the dirty limit: %v (status %d, code %q), want 503 SlowDown\n%s", err, resp.StatusCode, resp.Code, node.stderr.String())
	}
	if got := getAll(t, cl, "ckpt", "a"); !bytes.Equal(got, a) {
		t.Fatal("the acknowledged object reads back wrong while the origin is down")
	}
	if p := persisted(t, node.addr, env, "ckpt", "a"); p != "false" {
		t.Fatalf("x-granary-persisted %q with the origin down", p)
	}
	node.stop(t) // a clean stop, uploads still failing

	node = startChild(t, env, append([]string{"--origin", "s3://" + mio.Endpoint + "?secure=false"}, args...)...)
	var out bytes.Buffer
	if code := execute(ctx, []string{"flush", "--endpoint", "http://" + node.addr, "--timeout", "2m", "s3://ckpt"},
		&out, &out, envMap(env)); code != exitOK {
		t.Fatalf("flush: exit %d\n%s", code, out.String())
	}
	direct := directClient(t, mio)
	if got := getAll(t, direct, "ckpt", "a"); !bytes.Equal(got, a) {
		t.Fatal("the acknowledged object differs at the origin")
	}
	if _, err := direct.StatObject(ctx, "ckpt", "b", minio.StatObjectOptions{}); minio.ToErrorResponse(err).Code != "NoSuchKey" {
		t.Fatalf("the refused object: %v, want NoSuchKey at the origin", err)
	}
	node.stop(t)
}
