// Data tests of the test cluster through the real colinmarc/hdfs/v2
// client: write then read files of several sizes and block counts, state
// surviving a restart, standby fail-over and safe mode.
package hdfstest_test

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	hdfs "github.com/colinmarc/hdfs/v2"
	"github.com/granary-dev/granary/internal/hdfstest"
)

// writeFile writes data as name with the given block size; a close that
// reports ErrReplicating is retried, bounded.
func writeFile(t *testing.T, c *hdfs.Client, name string, blockSize int64, data []byte) {
	t.Helper()
	w, err := c.CreateFile(name, 1, blockSize, 0o644)
	must(t, err)
	if _, err := w.Write(data); err != nil {
		t.Fatalf("write %s: %v", name, err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		err = w.Close()
		if !errors.Is(err, hdfs.ErrReplicating) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond) // the client's documented retry
	}
	if err != nil {
		t.Fatalf("close %s: %v", name, err)
	}
}

// checkFile reads name whole and at offsets and compares with want.
func checkFile(t *testing.T, c *hdfs.Client, name string, want []byte) {
	t.Helper()
	fi, err := c.Stat(name)
	must(t, err)
	if fi.Size() != int64(len(want)) {
		t.Fatalf("%s: size %d, want %d", name, fi.Size(), len(want))
	}
	got, err := c.ReadFile(name)
	must(t, err)
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: ReadFile differs (%d bytes, want %d)", name, len(got), len(want))
	}
	f, err := c.Open(name)
	must(t, err)
	defer f.Close()
	for _, off := range []int{0, 1, len(want) / 3, len(want) / 2, len(want) - 1} {
		if off < 0 || off >= len(want) {
			continue
		}
		n := min(len(want)-off, 200_000)
		buf := make([]byte, n)
		if _, err := f.ReadAt(buf, int64(off)); err != nil && !errors.Is(err, io.EOF) {
			t.Fatalf("%s: ReadAt(%d, %d): %v", name, off, n, err)
		}
		if !bytes.Equal(buf, want[off:off+n]) {
			t.Fatalf("%s: ReadAt(%d, %d) differs", name, off, n)
		}
	}
	if _, err := f.ReadAt(make([]byte, 1), int64(len(want))); !errors.Is(err, io.EOF) {
		t.Errorf("%s: ReadAt at the end: %v, want io.EOF", name, err)
	}
}

func TestWriteRead(t *testing.T) {
	s, c := start(t)
	const bs = 1 << 20 // small blocks; a multiple of 512
	rng := rand.New(rand.NewPCG(1, 2))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	files := map[string][]byte{
		"/w/empty":   {},
		"/w/one":     {0x5a},
		"/w/mib":     random(1 << 20),
		"/w/3blocks": random(3*bs - 1000),
	}
	must(t, c.MkdirAll("/w", 0o755))
	for name, data := range files {
		writeFile(t, c, name, bs, data)
	}
	for name, data := range files {
		checkFile(t, c, name, data)
	}

	// The namespace and blocks survive a restart on the same directory.
	s.Stop()
	s2 := hdfstest.Start(t, hdfstest.Options{Dir: s.Dir})
	c2 := client(t, "granary", s2.NameNode)
	checkFile(t, c2, "/w/3blocks", files["/w/3blocks"])

	// Removing a file removes it for readers.
	must(t, c2.Remove("/w/mib"))
	if _, err := c2.ReadFile("/w/mib"); err == nil {
		t.Error("read after remove succeeded")
	}
}

func TestStandbyFailover(t *testing.T) {
	noLeaks(t)
	standby := hdfstest.Start(t, hdfstest.Options{Standby: true})
	active := hdfstest.Start(t, hdfstest.Options{})

	only := client(t, "granary", standby.NameNode)
	if _, err := only.Stat("/"); err == nil {
		t.Fatal("stat on a lone standby succeeded")
	}

	c := client(t, "granary", standby.NameNode, active.NameNode)
	must(t, c.MkdirAll("/ha/dir", 0o755))
	fi, err := c.Stat("/ha/dir")
	if err != nil || !fi.IsDir() {
		t.Fatalf("stat after fail-over: %v", err)
	}
	writeFile(t, c, "/ha/f", 1<<20, []byte("through the active namenode"))
	checkFile(t, c, "/ha/f", []byte("through the active namenode"))
}

func TestSafeMode(t *testing.T) {
	noLeaks(t)
	s := hdfstest.Start(t, hdfstest.Options{SafeMode: true})
	c := client(t, "granary", s.NameNode)
	if fi, err := c.Stat("/"); err != nil || !fi.IsDir() {
		t.Fatalf("stat / in safe mode: %v", err)
	}
	err := c.Mkdir("/x", 0o755)
	if exception(err) != "org.apache.hadoop.hdfs.server.namenode.SafeModeException" {
		t.Errorf("mkdir in safe mode: %v", err)
	}
}
