// Tests of a session's connection in this process: mounted through
// fusermount3 (as a supervisor that is not root mounts), served by a
// worker that replays the saved INIT, and closed.
package fuse

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

func TestSessionThroughFusermount(t *testing.T) {
	mc, bucket := newBucket(t)
	data := content(1, 300_000)
	put(t, mc, bucket, "a/b.bin", data)
	viaFusermount = true
	defer func() { viaFusermount = false }()
	dir, state := t.TempDir(), t.TempDir()
	opts := baseOptions(bucket)
	opts.ReadOnly = true
	path := os.Getenv("PATH")
	t.Setenv("PATH", "")
	if _, err := Connect(dir, state, opts); err == nil || !strings.Contains(err.Error(), "fusermount3") {
		t.Fatalf("Connect without fusermount3 on the PATH: %v", err)
	}
	os.Setenv("PATH", path)
	var conn *Conn
	bounded(t, 20*time.Second, "connect", func() {
		var err error
		if conn, err = Connect(dir, state, opts); err != nil {
			t.Error(err)
		}
	})
	if conn == nil {
		t.FailNow()
	}
	defer conn.Close()
	if ok, err := IsMounted(dir); !ok || err != nil {
		t.Fatalf("%s is not a FUSE mount after Connect: %v", dir, err)
	}
	fd, err := unix.Dup(int(conn.File().Fd()))
	if err != nil {
		t.Fatal(err)
	}
	opts.Session = &Session{FD: fd, Dir: state, Gen: 1}
	_, srv := mountT(t, opts)
	learnNoPoll(t, dir)
	bounded(t, 30*time.Second, "read", func() {
		if b, err := os.ReadFile(filepath.Join(dir, "a/b.bin")); err != nil || !bytes.Equal(b, data) {
			t.Errorf("read through the session: %d bytes, %v", len(b), err)
		}
	})
	if b, ok := readPool(t, srv.srv).New().([]byte); !ok || residentPages(t, b) != pages(b) {
		t.Error("a session's go-fuse makes request buffers that are not resident")
	}
	if srv.fsys.ids.j == nil {
		t.Error("a session's worker keeps no node journal")
	}
	if st, err := os.Stat(filepath.Join(state, journalFile)); err != nil || st.Size() == 0 {
		t.Errorf("node journal: %v", err)
	}
	bounded(t, 30*time.Second, "close", func() {
		if err := conn.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	if ok, _ := IsMounted(dir); ok {
		t.Errorf("%s still mounted after Close", dir)
	}
}

// TestResidentReads: a request buffer as go-fuse would first get it
// (fresh memory: no page mapped) comes out of the wrapped pool with
// every page mapped, so that the kernel's copy of a request into it
// needs no fault, which a worker being killed would fail (EIO to the
// caller, the request not resent).
func TestResidentReads(t *testing.T) {
	srv := &fuse.Server{}
	pool := readPool(t, srv)
	size := 34*os.Getpagesize() + 100
	var maps [][]byte
	defer func() {
		for _, m := range maps {
			unix.Munmap(m)
		}
	}()
	pool.New = func() any {
		m, err := unix.Mmap(-1, 0, size+os.Getpagesize(), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			t.Fatal(err)
		}
		maps = append(maps, m)
		return m[80 : 80+size] // as go-fuse aligns: not at a page start
	}
	if b := pool.New().([]byte); residentPages(t, b) != 0 {
		t.Fatalf("fresh memory: %d of %d pages already resident", residentPages(t, b), pages(b))
	}
	if !residentReads(srv) {
		t.Fatal("residentReads found no pool")
	}
	b := pool.New().([]byte)
	if n := residentPages(t, b); n != pages(b) {
		t.Errorf("a new request buffer: %d of its %d pages resident", n, pages(b))
	}
}

// readPool returns go-fuse's pool of request buffers in srv.
func readPool(t *testing.T, srv *fuse.Server) *sync.Pool {
	t.Helper()
	pool := requestBuffers(srv)
	if pool == nil {
		t.Fatal("go-fuse's Server has no pool of request buffers")
	}
	return pool
}

// pages returns how many pages b spans.
func pages(b []byte) int {
	ps := uintptr(os.Getpagesize())
	start := uintptr(unsafe.Pointer(&b[0])) &^ (ps - 1)
	end := uintptr(unsafe.Pointer(&b[len(b)-1])) + 1
	return int((end - start + ps - 1) / ps)
}

// residentPages returns how many of b's pages are mapped (mincore).
func residentPages(t *testing.T, b []byte) int {
	t.Helper()
	ps := uintptr(os.Getpagesize())
	start := uintptr(unsafe.Pointer(&b[0])) &^ (ps - 1)
	vec := make([]byte, pages(b))
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, start, uintptr(len(vec))*ps, uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatalf("mincore: %v", e)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}
