// The node table against the real kernel: every id it hands out through
// lookups, listings, creates and renames is forgotten again when the
// kernel drops its caches, with no lookup count off by one either way
// (too few would panic go-fuse's tree, too many would keep ids for ever).
package fuse

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/granary-dev/granary/internal/pagecache"
	"github.com/granary-dev/granary/internal/syncbuf"
)

func TestKernelForgetsEveryID(t *testing.T) {
	mc, bucket := newBucket(t)
	objs := map[string][]byte{}
	for i := range 200 {
		objs[fmt.Sprintf("set/f%03d", i)] = content(uint64(i), 100)
	}
	objs["top.txt"] = []byte("top")
	putMany(t, mc, bucket, objs)
	var logs syncbuf.Buffer
	opts := baseOptions(bucket)
	opts.Logger = zerolog.New(&logs)
	dir, s := mountT(t, opts)
	bounded(t, time.Minute, "use the mount", func() {
		ents, err := os.ReadDir(filepath.Join(dir, "set")) // READDIRPLUS
		if err != nil || len(ents) != 200 {
			t.Errorf("readdir: %d entries, %v", len(ents), err)
		}
		for i := range 20 {
			if b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("set/f%03d", i))); err != nil || !bytes.Equal(b, objs[fmt.Sprintf("set/f%03d", i)]) {
				t.Errorf("read f%03d: %v", i, err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "new.tmp"), []byte("new"), 0o644); err != nil {
			t.Error(err)
		}
		if err := os.Rename(filepath.Join(dir, "new.tmp"), filepath.Join(dir, "top.txt")); err != nil {
			t.Error(err)
		}
		if err := os.Remove(filepath.Join(dir, "set/f199")); err != nil {
			t.Error(err)
		}
		if _, err := os.Stat(filepath.Join(dir, "missing")); !os.IsNotExist(err) {
			t.Errorf("stat missing: %v", err)
		}
	})
	held := func() int {
		s.fsys.ids.mu.Lock()
		defer s.fsys.ids.mu.Unlock()
		return len(s.fsys.ids.m)
	}
	if n := held(); n < 200 {
		t.Fatalf("the table holds %d ids after 200 files were listed", n)
	}
	deadline := time.Now().Add(time.Minute)
	for held() > 0 {
		if err := pagecache.Drop(pagecache.Slab); err != nil {
			t.Fatalf("drop_caches: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d ids still held a minute into dropping the kernel's caches", held())
		}
		time.Sleep(50 * time.Millisecond)
	}
	for len(s.fsys.root.Children()) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("go-fuse's tree still holds %d children of the root", len(s.fsys.root.Children()))
		}
		pagecache.Drop(pagecache.Slab)
		time.Sleep(50 * time.Millisecond)
	}
	if l := logs.String(); strings.Contains(l, "panic") || strings.Contains(l, "underflow") {
		t.Errorf("go-fuse's tree complained:\n%s", l)
	}
}
