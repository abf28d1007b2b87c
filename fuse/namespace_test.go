// Namespace changes and refusals through a writable mount: unlink,
// mkdir, rmdir, what S3 cannot do, a failing upload, a Python writer.
package fuse

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/granary-dev/granary/internal/slowproxy"
)

func TestUnlinkMkdirRmdir(t *testing.T) {
	mc, bucket := newBucket(t)
	put(t, mc, bucket, "a/f", []byte("f"))
	put(t, mc, bucket, "a/g", []byte("g"))
	dir, _ := mountT(t, baseOptions(bucket))
	bounded(t, 30*time.Second, "namespace", func() {
		a := filepath.Join(dir, "a")
		names(t, a) // cache the listing: the changes must refresh it
		if err := os.Remove(filepath.Join(a, "f")); err != nil {
			t.Error(err)
		}
		wantGone(t, mc, bucket, "a/f")
		if _, err := os.Stat(filepath.Join(a, "f")); !errors.Is(err, syscall.ENOENT) {
			t.Errorf("stat after unlink: %v", err)
		}
		if err := os.Remove(filepath.Join(a, "nothing")); !errors.Is(err, syscall.ENOENT) {
			t.Errorf("unlink of a missing file: %v, want ENOENT", err)
		}
		if err := os.Mkdir(filepath.Join(a, "sub"), 0o755); err != nil {
			t.Error(err)
		}
		if got := names(t, a); !slices.Equal(got, []string{"g", "sub"}) {
			t.Errorf("readdir after mkdir: %v", got)
		}
		if got, err := getObj(t, mc, bucket, "a/sub/"); err != nil || len(got) != 0 {
			t.Errorf("folder marker: %q, %v", got, err)
		}
		if st, err := os.Stat(filepath.Join(a, "sub")); err != nil || !st.IsDir() {
			t.Errorf("stat of the new directory: %v", err)
		}
		if err := syscall.Rmdir(a); !errors.Is(err, syscall.ENOTEMPTY) {
			t.Errorf("rmdir of a non-empty directory: %v, want ENOTEMPTY", err)
		}
		if err := syscall.Rmdir(filepath.Join(a, "sub")); err != nil {
			t.Error(err)
		}
		wantGone(t, mc, bucket, "a/sub/")
		if got := names(t, a); !slices.Equal(got, []string{"g"}) {
			t.Errorf("readdir after rmdir: %v", got)
		}
	})
}

func TestUnsupported(t *testing.T) {
	mc, bucket := newBucket(t)
	put(t, mc, bucket, "d/f", []byte("data"))
	dir, _ := mountT(t, baseOptions(bucket))
	f, d := filepath.Join(dir, "d/f"), filepath.Join(dir, "d")
	bounded(t, 10*time.Second, "refusals", func() {
		refused := []struct {
			name string
			try  func() error
			want syscall.Errno
		}{
			{"chmod", func() error { return os.Chmod(f, 0o600) }, syscall.ENOTSUP},
			{"chmod dir", func() error { return os.Chmod(d, 0o700) }, syscall.ENOTSUP},
			{"chown", func() error { return os.Chown(f, 4242, 4242) }, syscall.ENOTSUP},
			{"symlink", func() error { return os.Symlink("f", filepath.Join(d, "l")) }, syscall.EPERM},
			{"link", func() error { return os.Link(f, filepath.Join(d, "h")) }, syscall.EPERM},
			{"setxattr", func() error { return syscall.Setxattr(f, "user.x", []byte("1"), 0) }, syscall.ENOTSUP},
		}
		for _, r := range refused {
			if err := r.try(); !errors.Is(err, r.want) {
				t.Errorf("%s: %v, want %v", r.name, err, r.want)
			}
		}
		// Accepted without effect: the mode already shown, and times.
		if err := os.Chmod(f, 0o644); err != nil {
			t.Errorf("chmod to the mode shown: %v", err)
		}
		if err := os.Chtimes(f, time.Now(), time.Now()); err != nil {
			t.Errorf("utimens: %v", err)
		}
		if got, err := os.ReadFile(f); err != nil || string(got) != "data" {
			t.Errorf("after refusals: %q, %v", got, err)
		}
	})
}

func TestUploadFails(t *testing.T) {
	_, bucket := newBucket(t)
	proxy, err := slowproxy.Start(server.Endpoint, slowproxy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	opts := baseOptions(bucket)
	opts.Endpoint = "http://" + proxy.Addr()
	dir, _ := mountT(t, opts)
	f, err := os.Create(filepath.Join(dir, "doomed"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(content(4, 1<<20)); err != nil {
		t.Fatal(err)
	}
	proxy.Close()
	bounded(t, 60*time.Second, "close", func() {
		start := time.Now()
		if err := f.Close(); !errors.Is(err, syscall.EIO) {
			t.Errorf("close with the endpoint down: %v, want EIO", err)
		}
		t.Logf("close failed after %v", time.Since(start).Round(time.Millisecond))
	})
}

// TestPythonWriter writes the way checkpoint libraries do: a header
// placeholder, the data, a seek back to fill the header, a temp file
// renamed into place.
func TestPythonWriter(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 not found (make deps installs it)")
	}
	mc, bucket := newBucket(t)
	dir, _ := mountT(t, baseOptions(bucket))
	const script = `
import os, sys
d = sys.argv[1]
tmp = os.path.join(d, "w.safetensors.tmp")
with open(tmp, "wb") as f:
    f.write(b"\0" * 8)
    for i in range(64):
        f.write(bytes([i]) * 65536)
    f.seek(0)
    f.write((64 * 65536).to_bytes(8, "little"))
    f.flush()
    os.fsync(f.fileno())
os.replace(tmp, os.path.join(d, "w.safetensors"))
with open(os.path.join(d, "w.safetensors"), "rb") as f:
    assert int.from_bytes(f.read(8), "little") == 64 * 65536
`
	bounded(t, 60*time.Second, "python", func() {
		out, err := exec.Command(py, "-c", script, dir).CombinedOutput()
		if err != nil {
			t.Errorf("python writer: %v\n%s", err, out)
			return
		}
		want := make([]byte, 8, 8+64*65536)
		copy(want, []byte{0, 0, 0x40})
		for i := 0; i < 64; i++ {
			want = append(want, slices.Repeat([]byte{byte(i)}, 65536)...)
		}
		wantObj(t, mc, bucket, dir, "w.safetensors", want)
		wantGone(t, mc, bucket, "w.safetensors.tmp")
	})
}
