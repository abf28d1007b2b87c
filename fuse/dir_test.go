// Directories and attributes through a real mount: a large listing,
// nested directories, folder markers, the prefix option, stat, ENOENT.
package fuse

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

func TestReaddirLarge(t *testing.T) {
	mc, bucket := newBucket(t)
	const n = 10_000
	objs := make(map[string][]byte, n)
	want := make([]string, 0, n)
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("f%05d", i)
		objs["big/"+name] = []byte{byte(i)}
		want = append(want, name)
	}
	start := time.Now()
	putMany(t, mc, bucket, objs)
	t.Logf("seeded %d objects in %v", n, time.Since(start))
	dir, _ := mountT(t, baseOptions(bucket))
	bounded(t, 30*time.Second, "readdir", func() {
		for _, pass := range []string{"cold", "cached"} {
			start := time.Now()
			ents, err := os.ReadDir(filepath.Join(dir, "big"))
			if err != nil {
				t.Error(err)
				return
			}
			t.Logf("readdir of %d entries (%s): %v", len(ents), pass, time.Since(start))
			got := make([]string, 0, len(ents))
			for _, e := range ents {
				if !e.Type().IsRegular() {
					t.Errorf("%s: type %v", e.Name(), e.Type())
				}
				got = append(got, e.Name())
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s: %d names, want %d (first %v)", pass, len(got), len(want), got[:min(3, len(got))])
			}
		}
		st, err := os.Stat(filepath.Join(dir, "big", "f01234"))
		if err != nil || st.Size() != 1 {
			t.Errorf("stat after listing: %v", err)
		}
	})
}

func TestTree(t *testing.T) {
	mc, bucket := newBucket(t)
	objs := map[string][]byte{
		"top.txt":        []byte("top"),
		"a/b/c/deep.bin": content(3, 5000),
		"a/b/side.txt":   []byte("side"),
		"a/one.txt":      []byte("one"),
		"empty/":         nil, // a folder marker alone: an empty directory
		"marked/":        nil, // a folder marker beside children
		"marked/in.txt":  []byte("in"),
		"sub/x/y.txt":    []byte("y"),
		"sub/z.txt":      []byte("zz"),
		"subling.txt":    []byte("not under sub/"),
	}
	putMany(t, mc, bucket, objs)
	opts := baseOptions(bucket)
	opts.UID, opts.GID, opts.FileMode, opts.DirMode = 1234, 4321, 0o640, 0o750
	dir, _ := mountT(t, opts)
	bounded(t, 20*time.Second, "tree", func() {
		wantDir := map[string][]string{
			".":      {"a", "empty", "marked", "sub", "subling.txt", "top.txt"},
			"a":      {"b", "one.txt"},
			"a/b":    {"c", "side.txt"},
			"a/b/c":  {"deep.bin"},
			"empty":  nil,
			"marked": {"in.txt"},
		}
		for d, want := range wantDir {
			if got := names(t, filepath.Join(dir, d)); !slices.Equal(got, want) {
				t.Errorf("readdir %s: %v, want %v", d, got, want)
			}
		}
		checkStat(t, filepath.Join(dir, "a/b/c/deep.bin"), false, 5000, 0o640)
		checkStat(t, filepath.Join(dir, "top.txt"), false, 3, 0o640)
		checkStat(t, filepath.Join(dir, "a/b"), true, 0, 0o750)
		checkStat(t, filepath.Join(dir, "empty"), true, 0, 0o750)
		// Lookups without a listing first: HEAD, then a prefix probe.
		checkStat(t, filepath.Join(dir, "sub/x"), true, 0, 0o750)
		checkStat(t, filepath.Join(dir, "sub/x/y.txt"), false, 1, 0o640)
		for _, missing := range []string{"nope", "a/nope", "sub/x/y", "a/b/c/deep.bi"} {
			if _, err := os.Stat(filepath.Join(dir, missing)); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("stat %s: %v, want ENOENT", missing, err)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "a/b/c/deep.bin/x")); !errors.Is(err, syscall.ENOTDIR) {
			t.Errorf("stat under a file: %v, want ENOTDIR", err)
		}
		if got, err := os.ReadFile(filepath.Join(dir, "a/b/c/deep.bin")); err != nil || sum(got) != sum(objs["a/b/c/deep.bin"]) {
			t.Errorf("read deep.bin: %v", err)
		}
	})
	// Only the prefix's subtree is visible under Prefix.
	opts = baseOptions(bucket)
	opts.Prefix = "sub"
	sub, _ := mountT(t, opts)
	bounded(t, 10*time.Second, "prefix", func() {
		if got := names(t, sub); !slices.Equal(got, []string{"x", "z.txt"}) {
			t.Errorf("prefix root: %v", got)
		}
		if got, err := os.ReadFile(filepath.Join(sub, "x/y.txt")); err != nil || string(got) != "y" {
			t.Errorf("read under prefix: %q, %v", got, err)
		}
		for _, outside := range []string{"top.txt", "sub", "subling.txt", "ling.txt"} {
			if _, err := os.Stat(filepath.Join(sub, outside)); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("stat %s under prefix: %v, want ENOENT", outside, err)
			}
		}
	})
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Errorf("readdir %s: %v", dir, err)
		return nil
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func checkStat(t *testing.T, path string, dir bool, size int64, perm os.FileMode) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Errorf("stat %s: %v", path, err)
		return
	}
	sys := st.Sys().(*syscall.Stat_t)
	if st.IsDir() != dir || st.Mode().Perm() != perm || sys.Uid != 1234 || sys.Gid != 4321 ||
		(!dir && st.Size() != size) {
		t.Errorf("stat %s: dir %v mode %v uid %d gid %d size %d; want dir %v mode %v uid 1234 gid 4321 size %d",
			path, st.IsDir(), st.Mode(), sys.Uid, sys.Gid, st.Size(), dir, perm, size)
	}
	if !dir && time.Since(st.ModTime()) > time.Minute {
		t.Errorf("stat %s: mtime %v, want the upload time", path, st.ModTime())
	}
}
