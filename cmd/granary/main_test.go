// Tests of the command line as a person runs it: exit codes, help, and
// `serve` end to end (in-process) in front of a real MinIO and of its
// default local-directory origin, with minio-go as the client.
package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/granary-dev/granary/internal/miniotest"
	"github.com/granary-dev/granary/internal/syncbuf"
)

func TestExitCodes(t *testing.T) {
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"version"}, exitOK, "granary "},
		{[]string{"--help"}, exitOK, "serve"},
		{[]string{"serve", "--help"}, exitOK, "GRANARY_RAM"},
		{[]string{"bogus"}, exitUsage, "unknown command"},
		{[]string{"serve", "--no-such-flag"}, exitUsage, "no-such-flag"},
		{[]string{"serve", "--ram", "12 parsecs"}, exitUsage, "invalid size"},
		{[]string{"serve", "--origin", "gopher://x"}, exitUsage, "unknown scheme"},
		{[]string{"serve", "--ram", "0", "--disk", "0"}, exitUsage, "at least one cache tier"},
		{[]string{"serve", "extra-arg"}, exitUsage, "unknown command"},
		{[]string{"version", "--endpoint", "localhost:9000"}, exitUsage, "http://HOST:PORT"},
	}
	for _, tc := range cases {
		var out, errb bytes.Buffer
		code := execute(context.Background(), tc.args, &out, &errb, envMap(map[string]string{"GRANARY_DATA_DIR": t.TempDir()}))
		if code != tc.code || !strings.Contains(out.String()+errb.String(), tc.want) {
			t.Errorf("%v: exit %d, want %d; output lacks %q:\n%s%s", tc.args, code, tc.code, tc.want, out.String(), errb.String())
		}
	}
}

func TestServeHelpNamesEveryEnvVar(t *testing.T) {
	var out bytes.Buffer
	execute(context.Background(), []string{"serve", "--help"}, &out, &out, envMap(nil))
	for _, s := range serveSettings {
		if !strings.Contains(out.String(), s.env()) || !strings.Contains(out.String(), "--"+s.name) {
			t.Errorf("help does not mention --%s and %s", s.name, s.env())
		}
	}
}

// server is a `granary serve` running in-process.
type server struct {
	addr    string
	stderr  *syncbuf.Buffer
	cancel  context.CancelFunc
	done    chan int
	stopped sync.Once
}

var servingRE = regexp.MustCompile(`serving S3 at https?://(\S+) `)

// gossipRE finds the gossip address in the banner.
var gossipRE = regexp.MustCompile(`\n  gossip: (\S+) `)

// startServe runs `granary serve args` with env until the test ends, and
// waits (bounded) for it to print its address.
func startServe(t *testing.T, env map[string]string, args ...string) *server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &server{stderr: &syncbuf.Buffer{}, cancel: cancel, done: make(chan int, 1)}
	go func() {
		s.done <- execute(ctx, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...), io.Discard, s.stderr, envMap(env))
	}()
	deadline := time.After(30 * time.Second)
	for s.addr == "" {
		if m := servingRE.FindStringSubmatch(s.stderr.String()); m != nil {
			s.addr = m[1]
			break
		}
		select {
		case code := <-s.done:
			cancel()
			t.Fatalf("serve exited with %d:\n%s", code, s.stderr.String())
		case <-deadline:
			cancel()
			t.Fatalf("serve printed no address:\n%s", s.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Cleanup(func() { s.stop(t) })
	return s
}

// stop cancels the server (as SIGINT would) and checks it exits cleanly;
// calls after the first do nothing.
func (s *server) stop(t *testing.T) {
	s.stopped.Do(func() {
		s.cancel()
		select {
		case code := <-s.done:
			if code != exitOK {
				t.Errorf("serve exited with %d:\n%s", code, s.stderr.String())
			}
		case <-time.After(40 * time.Second):
			t.Errorf("serve did not stop:\n%s", s.stderr.String())
		}
	})
}

// putGet makes a bucket, writes and reads an object through cl.
func putGet(t *testing.T, cl *minio.Client, bucket string) {
	t.Helper()
	ctx := context.Background()
	if err := cl.MakeBucket(ctx, bucket, minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	body := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
	if _, err := cl.PutObject(ctx, bucket, "dir/obj", bytes.NewReader(body), int64(len(body)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	for range 2 { // a miss, then a hit
		obj, err := cl.GetObject(ctx, bucket, "dir/obj", minio.GetObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(obj)
		obj.Close()
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("read back %d bytes, %v", len(got), err)
		}
	}
}

func TestServeInFrontOfMinIO(t *testing.T) {
	mio := miniotest.StartT(t)
	env := map[string]string{
		"GRANARY_ACCESS_KEY": "serve-test-access", "GRANARY_SECRET_KEY": "serve-test-secret",
		"GRANARY_ORIGIN_ACCESS_KEY": mio.AccessKey, "GRANARY_ORIGIN_SECRET_KEY": mio.SecretKey,
		"GRANARY_DATA_DIR": t.TempDir(),
	}
	s := startServe(t, env, "--origin", "s3://"+mio.Endpoint+"?secure=false", "--ram", "64MiB", "--disk", "128MiB")
	cf := clientFlags{endpoint: "http://" + s.addr}
	cl, err := cf.Client(envMap(env))
	if err != nil {
		t.Fatal(err)
	}
	putGet(t, cl, "through-granary")
	// The object reached the origin, not just the cache.
	direct, err := newS3Client(mio.URL(), envMap(map[string]string{"GRANARY_ACCESS_KEY": mio.AccessKey, "GRANARY_SECRET_KEY": mio.SecretKey}))
	if err != nil {
		t.Fatal(err)
	}
	if info, err := direct.StatObject(context.Background(), "through-granary", "dir/obj", minio.StatObjectOptions{}); err != nil || info.Size != 1<<20 {
		t.Fatalf("origin stat: %+v %v", info.Size, err)
	}
	if out := s.stderr.String(); strings.Contains(out, "serve-test-secret") || strings.Contains(out, mio.SecretKey) {
		t.Fatalf("a secret from the environment was printed or logged:\n%s", out)
	}
	metrics := httpGet(t, "http://"+s.addr+"/metrics")
	for _, want := range []string{"go_goroutines ", "process_resident_memory_bytes ", "granary_"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	var vout bytes.Buffer
	want := "server http://" + s.addr + ": granary " + Version() + ", health 200 OK"
	if code := execute(context.Background(), []string{"version", "--endpoint", "http://" + s.addr}, &vout, &vout, envMap(nil)); code != exitOK || !strings.Contains(vout.String(), want) {
		t.Fatalf("version --endpoint: %d %s; want %q", code, vout.String(), want)
	}
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return string(b)
}

// TestServeWithNoConfiguration is the newcomer's first command: no flags
// but a free port, run in an empty directory.
func TestServeWithNoConfiguration(t *testing.T) {
	t.Chdir(t.TempDir())
	s := startServe(t, nil)
	for _, d := range []string{"granary-data/origin", "granary-data/cache"} {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			t.Fatalf("%s: %v", d, err)
		}
	}
	creds, err := readCredentialsFile(filepath.Join("granary-data", credentialsFile))
	if err != nil {
		t.Fatal(err)
	}
	out := s.stderr.String()
	if !strings.Contains(out, "export AWS_ACCESS_KEY_ID="+creds.AccessKey+" AWS_SECRET_ACCESS_KEY="+creds.SecretKey) ||
		!strings.Contains(out, "aws --endpoint-url http://"+s.addr+" s3 ls") {
		t.Fatalf("banner lacks the credentials or the example:\n%s", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "{") && strings.Contains(line, creds.SecretKey) {
			t.Fatalf("secret in a log line: %s", line)
		}
	}
	cl, err := newS3Client("http://"+s.addr, envMap(map[string]string{"GRANARY_ACCESS_KEY": creds.AccessKey, "GRANARY_SECRET_KEY": creds.SecretKey}))
	if err != nil {
		t.Fatal(err)
	}
	putGet(t, cl, "first-bucket")
	if _, err := os.Stat(filepath.Join("granary-data", "origin", "first-bucket")); err != nil {
		t.Fatalf("bucket is not a directory of the origin: %v", err)
	}
}

// TestServeUploadsWithCRC32C: with payload=crc32c in the origin URL the
// node's uploads reach the origin with a CRC32C the origin checked and
// kept (it answers it with the object's info), where a signed upload
// leaves none.
func TestServeUploadsWithCRC32C(t *testing.T) {
	mio := miniotest.StartT(t)
	direct, err := newS3Client(mio.URL(), envMap(map[string]string{"GRANARY_ACCESS_KEY": mio.AccessKey, "GRANARY_SECRET_KEY": mio.SecretKey}))
	if err != nil {
		t.Fatal(err)
	}
	for _, payload := range []string{"signed", "crc32c"} {
		env := map[string]string{
			"GRANARY_ACCESS_KEY": "serve-test-access", "GRANARY_SECRET_KEY": "serve-test-secret",
			"GRANARY_ORIGIN_ACCESS_KEY": mio.AccessKey, "GRANARY_ORIGIN_SECRET_KEY": mio.SecretKey,
			"GRANARY_DATA_DIR": t.TempDir(),
		}
		s := startServe(t, env, "--origin", "s3://"+mio.Endpoint+"?secure=false&payload="+payload, "--ram", "64MiB", "--disk", "0")
		cf := clientFlags{endpoint: "http://" + s.addr}
		cl, err := cf.Client(envMap(env))
		if err != nil {
			t.Fatal(err)
		}
		putGet(t, cl, "payload-"+payload)
		info, err := direct.StatObject(context.Background(), "payload-"+payload, "dir/obj", minio.StatObjectOptions{Checksum: true})
		if err != nil {
			t.Fatal(err)
		}
		if got := info.ChecksumCRC32C != ""; got != (payload == "crc32c") {
			t.Errorf("payload=%s: the origin keeps CRC32C %q", payload, info.ChecksumCRC32C)
		}
		s.stop(t)
	}
}
