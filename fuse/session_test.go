// Tests of a session's connection in this process: mounted through
// fusermount3 (as a supervisor that is not root mounts), served by a
// worker that replays the saved INIT, and closed.
package fuse

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
