// Test scaffolding: one MinIO for the package, a bucket per test, real
// kernel mounts unmounted in t.Cleanup, and deterministic file contents.
package fuse

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/granary-dev/granary/internal/miniotest"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sys/unix"
)

// server is the MinIO every test shares; nil when FUSE is unavailable.
var server *miniotest.Server

// fuseMissing says why the tests cannot mount, or is "".
func fuseMissing() string {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return "no /dev/fuse: " + err.Error()
	}
	if os.Geteuid() != 0 {
		return "not root: the tests mount with the mount syscall"
	}
	return ""
}

func TestMain(m *testing.M) {
	if fuseMissing() == "" {
		s, err := miniotest.Start()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		server = s
	}
	code := m.Run()
	if server != nil {
		server.Stop()
	}
	os.Exit(code)
}

func requireFUSE(t *testing.T) {
	t.Helper()
	if why := fuseMissing(); why != "" {
		t.Skip("FUSE tests skipped: " + why)
	}
}

var bucketSeq atomic.Int64

// newBucket creates an empty bucket for one test and returns a client.
func newBucket(t *testing.T) (*minio.Client, string) {
	t.Helper()
	requireFUSE(t)
	mc, err := minio.New(server.Endpoint, &minio.Options{
		Creds: credentials.NewStaticV4(server.AccessKey, server.SecretKey, "")})
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("fuse-%d-%d", time.Now().UnixNano()%1e9, bucketSeq.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := mc.MakeBucket(ctx, name, minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	return mc, name
}

// put stores data at key.
func put(t testing.TB, mc *minio.Client, bucket, key string, data []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := mc.PutObject(ctx, bucket, key, bytes.NewReader(data), int64(len(data)),
		minio.PutObjectOptions{DisableMultipart: true}); err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
}

// putMany stores every key of objs, 16 at a time.
func putMany(t *testing.T, mc *minio.Client, bucket string, objs map[string][]byte) {
	t.Helper()
	var g errgroup.Group
	g.SetLimit(16)
	for k, v := range objs {
		g.Go(func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, err := mc.PutObject(ctx, bucket, k, bytes.NewReader(v), int64(len(v)),
				minio.PutObjectOptions{DisableMultipart: true})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
}

// content returns n deterministic pseudo-random bytes for seed.
func content(seed uint64, n int) []byte {
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), byte(seed >> 16), 7})
	r.Read(b)
	return b
}

func sum(b []byte) [32]byte { return sha256.Sum256(b) }

// baseOptions mounts bucket on the shared MinIO.
func baseOptions(bucket string) Options {
	return Options{Endpoint: server.URL(), AccessKey: server.AccessKey, SecretKey: server.SecretKey,
		Bucket: bucket, MetadataTTL: 2 * time.Second, Logger: zerolog.Nop()}
}

// mountT mounts opts on a fresh directory and unmounts it when the test
// ends, passed or not.
func mountT(t *testing.T, opts Options) (string, *Server) {
	t.Helper()
	dir := t.TempDir()
	var s *Server
	bounded(t, 20*time.Second, "mount", func() {
		var err error
		if s, err = Mount(dir, opts); err != nil {
			t.Error(err)
		}
	})
	if s == nil {
		t.FailNow()
	}
	t.Cleanup(func() {
		done := make(chan error, 1)
		go func() { done <- s.Unmount() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("unmount: %v\n%s", err, goroutines())
			}
		case <-time.After(time.Minute): // a hang, not slowness on a busy machine
			t.Errorf("unmount of %s hangs\n%s", dir, goroutines())
		}
		if mounted(dir) {
			t.Errorf("%s still mounted after Unmount", dir)
		}
	})
	return dir, s
}

// goroutines returns every goroutine's stack, for a test that failed
// on a hang.
func goroutines() string {
	buf := make([]byte, 4<<20)
	return "goroutines:\n" + string(buf[:runtime.Stack(buf, true)])
}

// bounded runs fn and fails the test if it takes longer than d. A FUSE
// call that hangs cannot be interrupted; the test then fails and the
// cleanup detaches the mount.
func bounded(t *testing.T, d time.Duration, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not finish within %v\n%s", what, d, goroutines())
	}
}

// mounted reports whether dir is a mount point, from /proc/self/mountinfo.
func mounted(dir string) bool {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && fields[4] == dir {
			return true
		}
	}
	return false
}

// learnNoPoll has the kernel learn that the file system at dir does not
// answer POLL, as go-fuse does after a mount at a path (it cannot for a
// session's /dev/fd/N). Until then, the Go runtime registering a file of
// dir with its poller sends a POLL and waits for it inside epoll_ctl,
// holding the poller: in the process that serves dir, a deadlock. It
// uses raw system calls, which stay out of the poller.
func learnNoPoll(t *testing.T, dir string) {
	t.Helper()
	fd, err := unix.Open(filepath.Join(dir, ".go-fuse-epoll-hack"), unix.O_RDONLY, 0)
	if err != nil {
		t.Fatalf("open the poll probe: %v", err)
	}
	defer unix.Close(fd)
	unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN | unix.POLLPRI | unix.POLLOUT}}, 0)
}
