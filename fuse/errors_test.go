// Failures through a real mount: writes refused by a read-only mount,
// mount errors, and an endpoint that goes away while mounted.
package fuse

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/granary-dev/granary/internal/slowproxy"
)

// TestReadOnly: a read-only mount refuses every change with EROFS.
func TestReadOnly(t *testing.T) {
	mc, bucket := newBucket(t)
	put(t, mc, bucket, "d/f", []byte("data"))
	opts := baseOptions(bucket)
	opts.ReadOnly = true
	dir, _ := mountT(t, opts)
	f, d := filepath.Join(dir, "d/f"), filepath.Join(dir, "d")
	bounded(t, 10*time.Second, "writes", func() {
		attempts := map[string]func() error{
			"create": func() error { _, err := os.Create(filepath.Join(d, "new")); return err },
			"open for write": func() error {
				_, err := os.OpenFile(f, os.O_WRONLY, 0)
				return err
			},
			"truncate": func() error { return os.Truncate(f, 1) },
			"mkdir":    func() error { return os.Mkdir(filepath.Join(d, "sub"), 0o755) },
			"unlink":   func() error { return os.Remove(f) },
			"rmdir":    func() error { return syscall.Rmdir(d) },
			"rename":   func() error { return os.Rename(f, filepath.Join(d, "g")) },
			"chmod":    func() error { return os.Chmod(f, 0o600) },
			"symlink":  func() error { return os.Symlink("f", filepath.Join(d, "l")) },
			"link":     func() error { return os.Link(f, filepath.Join(d, "h")) },
			"setxattr": func() error { return syscall.Setxattr(f, "user.x", []byte("1"), 0) },
			"utimens":  func() error { return os.Chtimes(f, time.Now(), time.Now()) },
		}
		for name, try := range attempts {
			if err := try(); !errors.Is(err, syscall.EROFS) {
				t.Errorf("read-only: %s: %v, want EROFS", name, err)
			}
		}
		// A file open for reading cannot be written.
		h, err := os.Open(f)
		if err != nil {
			t.Error(err)
			return
		}
		defer h.Close()
		if _, err := h.Write([]byte("x")); err == nil {
			t.Errorf("write to a file open for reading succeeded")
		}
		if got, err := os.ReadFile(f); err != nil || string(got) != "data" {
			t.Errorf("after refused writes: %q, %v", got, err)
		}
	})
}

func TestMountErrors(t *testing.T) {
	_, bucket := newBucket(t)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := closed.Addr().String()
	closed.Close()
	cases := []struct {
		name string
		edit func(*Options)
		want string
	}{
		{"missing bucket", func(o *Options) { o.Bucket = "no-such-bucket-here" }, "does not exist"},
		{"wrong secret", func(o *Options) { o.SecretKey = "wrong-secret-key" }, "denied"},
		{"unknown key", func(o *Options) { o.AccessKey = "nobody" }, "denied"},
		{"endpoint down", func(o *Options) { o.Endpoint = "http://" + deadAddr }, "unreachable"},
		{"bad endpoint", func(o *Options) { o.Endpoint = "ftp://x" }, "endpoint"},
		{"invalid bucket name", func(o *Options) { o.Bucket = "ab" }, "bucket name"},
		{"missing staging directory", func(o *Options) { o.StageDir = "/nonexistent/stage" }, "staging directory"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			opts := baseOptions(bucket)
			c.edit(&opts)
			start := time.Now()
			var err error
			bounded(t, 15*time.Second, "Mount", func() {
				var s *Server
				if s, err = Mount(dir, opts); err == nil {
					s.Unmount()
				}
			})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Mount: %v, want an error saying %q", err, c.want)
			}
			t.Logf("%s: %v after %v", c.name, err, time.Since(start).Round(time.Millisecond))
			if mounted(dir) {
				t.Errorf("%s is mounted after a failed Mount", dir)
			}
		})
	}
}

func TestEndpointDown(t *testing.T) {
	mc, bucket := newBucket(t)
	put(t, mc, bucket, "a", content(5, 1<<20))
	put(t, mc, bucket, "b", content(6, 1<<20))
	proxy, err := slowproxy.Start(server.Endpoint, slowproxy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	opts := baseOptions(bucket)
	opts.Endpoint = "http://" + proxy.Addr()
	dir, _ := mountT(t, opts)
	bounded(t, 10*time.Second, "reads before", func() {
		if _, err := os.ReadFile(filepath.Join(dir, "a")); err != nil {
			t.Error(err)
		}
	})
	// Opened (HEAD done) while the endpoint is up, read after it is gone.
	b, err := os.Open(filepath.Join(dir, "b"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	proxy.Close()
	bounded(t, 20*time.Second, "reads after", func() {
		start := time.Now()
		_, err := b.Read(make([]byte, 4096))
		if !errors.Is(err, syscall.EIO) {
			t.Errorf("read with the endpoint down: %v, want EIO", err)
		}
		t.Logf("read failed after %v", time.Since(start).Round(time.Millisecond))
		if _, err := os.Stat(filepath.Join(dir, "c")); !errors.Is(err, syscall.EIO) {
			t.Errorf("lookup with the endpoint down: %v, want EIO", err)
		}
	})
}

func TestUnmountBusy(t *testing.T) {
	mc, bucket := newBucket(t)
	put(t, mc, bucket, "f", []byte("held open"))
	dir := t.TempDir()
	s, err := Mount(dir, baseOptions(bucket))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "f"))
	if err != nil {
		s.Unmount()
		t.Fatal(err)
	}
	defer f.Close()
	bounded(t, 20*time.Second, "busy unmount", func() {
		if err := s.Unmount(); err != nil {
			t.Errorf("unmount with a file open: %v", err)
		}
	})
	if mounted(dir) {
		t.Errorf("%s still mounted", dir)
	}
	f.Close()
	bounded(t, 10*time.Second, "Wait", s.Wait)
}
