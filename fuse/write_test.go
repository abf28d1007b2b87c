// Writes through a real mount, checked both through the mount and
// directly over S3: whole files, non-sequential writes, appends and
// in-place edits, truncation, and checkpoint-style temp-then-rename.
package fuse

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
)

// getObj returns the object at key over S3, or nil and the error.
func getObj(t *testing.T, mc *minio.Client, bucket, key string) ([]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	o, err := mc.GetObject(ctx, bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, err
	}
	defer o.Close()
	return io.ReadAll(o)
}

// wantObj checks that key holds want, over S3 and through the mount at
// dir.
func wantObj(t *testing.T, mc *minio.Client, bucket, dir, key string, want []byte) {
	t.Helper()
	got, err := getObj(t, mc, bucket, key)
	if err != nil || sum(got) != sum(want) {
		t.Errorf("S3 %s: %d bytes, %v; want %d bytes with sha256 %x", key, len(got), err, len(want), sum(want))
	}
	got, err = os.ReadFile(filepath.Join(dir, key))
	if err != nil || sum(got) != sum(want) {
		t.Errorf("mount %s: %d bytes, %v; want %d bytes", key, len(got), err, len(want))
	}
	if st, err := os.Stat(filepath.Join(dir, key)); err != nil || st.Size() != int64(len(want)) {
		t.Errorf("stat %s: %v, want size %d", key, err, len(want))
	}
}

// wantGone checks that key is absent over S3.
func wantGone(t *testing.T, mc *minio.Client, bucket, key string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := mc.StatObject(ctx, bucket, key, minio.StatObjectOptions{}); minio.ToErrorResponse(err).Code != minio.NoSuchKey {
		t.Errorf("S3 %s: %v, want NoSuchKey", key, err)
	}
}

func TestWriteWholeFiles(t *testing.T) {
	mc, bucket := newBucket(t)
	dir, _ := mountT(t, baseOptions(bucket))
	sizes := map[string]int{"w/zero": 0, "w/small": 1 << 10, "w/large": 20 << 20}
	bounded(t, 60*time.Second, "writes", func() {
		if err := os.Mkdir(filepath.Join(dir, "w"), 0o755); err != nil {
			t.Error(err)
			return
		}
		for key, n := range sizes {
			data := content(uint64(n), n)
			start := time.Now()
			if err := os.WriteFile(filepath.Join(dir, key), data, 0o644); err != nil {
				t.Errorf("write %s: %v", key, err)
				continue
			}
			t.Logf("wrote %s (%d bytes) in %v", key, n, time.Since(start).Round(time.Millisecond))
			wantObj(t, mc, bucket, dir, key, data)
		}
		if got := names(t, filepath.Join(dir, "w")); !slices.Equal(got, []string{"large", "small", "zero"}) {
			t.Errorf("readdir after writes: %v", got)
		}
		// Overwrite: the new content, not the cached old one.
		data := content(99, 1<<10) // same size, other bytes
		if err := os.WriteFile(filepath.Join(dir, "w/small"), data, 0o644); err != nil {
			t.Error(err)
		}
		wantObj(t, mc, bucket, dir, "w/small", data)
	})
}

func TestWriteNonSequential(t *testing.T) {
	mc, bucket := newBucket(t)
	opts := baseOptions(bucket)
	opts.StageDir = t.TempDir()
	dir, _ := mountT(t, opts)
	const n = 6 << 20
	want := make([]byte, n)
	bounded(t, 60*time.Second, "writes", func() {
		f, err := os.OpenFile(filepath.Join(dir, "ckpt.bin"), os.O_CREATE|os.O_RDWR|os.O_EXCL, 0o644)
		if err != nil {
			t.Error(err)
			return
		}
		defer f.Close()
		// Out of order, with a hole, then a seek back over written bytes.
		for _, w := range []struct{ off, len int }{{4 << 20, 2 << 20}, {0, 1 << 20}, {100, 3000}, {(1 << 20) + 7, 5}} {
			b := content(uint64(w.off+w.len), w.len)
			copy(want[w.off:], b)
			if _, err := f.WriteAt(b, int64(w.off)); err != nil {
				t.Error(err)
				return
			}
		}
		if _, err := f.Seek(10, io.SeekStart); err != nil {
			t.Error(err)
		}
		copy(want[10:], "header")
		if _, err := f.Write([]byte("header")); err != nil {
			t.Error(err)
		}
		// Before close: the staged size and bytes.
		if st, err := os.Stat(filepath.Join(dir, "ckpt.bin")); err != nil || st.Size() != n {
			t.Errorf("stat while writing: %v, size want %d", err, n)
		}
		// The staging file is in StageDir, unlinked from the start:
		// nothing to clean up, whatever happens to the process.
		if ents, err := os.ReadDir(opts.StageDir); err != nil || len(ents) != 0 {
			t.Errorf("staging directory while writing: %v, %v", ents, err)
		}
		if !openDeletedIn(opts.StageDir) {
			t.Errorf("no unlinked staging file open in %s", opts.StageDir)
		}
		got := make([]byte, n)
		if _, err := f.ReadAt(got, 0); err != nil || !bytes.Equal(got, want) {
			t.Errorf("read back while open: %v, equal %v", err, bytes.Equal(got, want))
		}
		if err := f.Sync(); err != nil {
			t.Errorf("fsync: %v", err)
		}
		if err := f.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		wantObj(t, mc, bucket, dir, "ckpt.bin", want)
	})
}

func TestAppendAndEdit(t *testing.T) {
	mc, bucket := newBucket(t)
	orig := content(1, 300<<10)
	put(t, mc, bucket, "log", orig)
	put(t, mc, bucket, "edit", orig)
	dir, _ := mountT(t, baseOptions(bucket))
	bounded(t, 30*time.Second, "append and edit", func() {
		// Read first, so the kernel caches the old bytes.
		if _, err := os.ReadFile(filepath.Join(dir, "log")); err != nil {
			t.Error(err)
		}
		f, err := os.OpenFile(filepath.Join(dir, "log"), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Error(err)
			return
		}
		_, werr := f.Write([]byte("appended line\n"))
		if cerr := f.Close(); werr != nil || cerr != nil {
			t.Errorf("append: %v, close: %v", werr, cerr)
		}
		wantObj(t, mc, bucket, dir, "log", append(slices.Clone(orig), "appended line\n"...))

		f, err = os.OpenFile(filepath.Join(dir, "edit"), os.O_RDWR, 0)
		if err != nil {
			t.Error(err)
			return
		}
		_, werr = f.WriteAt([]byte("EDIT"), 1000)
		if cerr := f.Close(); werr != nil || cerr != nil {
			t.Errorf("edit: %v, close: %v", werr, cerr)
		}
		want := slices.Clone(orig)
		copy(want[1000:], "EDIT")
		wantObj(t, mc, bucket, dir, "edit", want)
	})
}

func TestTruncate(t *testing.T) {
	mc, bucket := newBucket(t)
	orig := content(2, 1<<20)
	put(t, mc, bucket, "t", orig)
	put(t, mc, bucket, "o", orig)
	dir, _ := mountT(t, baseOptions(bucket))
	bounded(t, 30*time.Second, "truncate", func() {
		// truncate(2) of a path: uploaded at once.
		if err := os.Truncate(filepath.Join(dir, "t"), 1000); err != nil {
			t.Error(err)
		}
		wantObj(t, mc, bucket, dir, "t", orig[:1000])
		// ftruncate of a descriptor, growing then writing: uploaded at close.
		f, err := os.OpenFile(filepath.Join(dir, "t"), os.O_RDWR, 0)
		if err != nil {
			t.Error(err)
			return
		}
		ferr := f.Truncate(2000)
		_, werr := f.WriteAt([]byte("end"), 1997)
		if cerr := f.Close(); ferr != nil || werr != nil || cerr != nil {
			t.Errorf("ftruncate %v, write %v, close %v", ferr, werr, cerr)
		}
		want := append(slices.Clone(orig[:1000]), make([]byte, 1000)...)
		copy(want[1997:], "end")
		wantObj(t, mc, bucket, dir, "t", want)
		// O_TRUNC: the old content is gone even if nothing is written.
		f, err = os.OpenFile(filepath.Join(dir, "o"), os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			t.Error(err)
			return
		}
		if err := f.Close(); err != nil {
			t.Error(err)
		}
		wantObj(t, mc, bucket, dir, "o", nil)
	})
}

func TestRename(t *testing.T) {
	mc, bucket := newBucket(t)
	put(t, mc, bucket, "ck/model.pt", []byte("old checkpoint"))
	put(t, mc, bucket, "ck/dir/in", []byte("x"))
	dir, _ := mountT(t, baseOptions(bucket))
	bounded(t, 30*time.Second, "rename", func() {
		ck := filepath.Join(dir, "ck")
		data := content(3, 3<<20)
		// The checkpoint pattern: write a temp file, rename over the old.
		if err := os.WriteFile(filepath.Join(ck, "model.pt.tmp"), data, 0o644); err != nil {
			t.Error(err)
		}
		if got := names(t, ck); !slices.Equal(got, []string{"dir", "model.pt", "model.pt.tmp"}) {
			t.Errorf("readdir after writing the temp file: %v", got)
		}
		if err := os.Rename(filepath.Join(ck, "model.pt.tmp"), filepath.Join(ck, "model.pt")); err != nil {
			t.Error(err)
		}
		wantObj(t, mc, bucket, dir, "ck/model.pt", data)
		wantGone(t, mc, bucket, "ck/model.pt.tmp")
		if _, err := os.Stat(filepath.Join(ck, "model.pt.tmp")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("stat of the renamed temp file: %v", err)
		}
		if got := names(t, ck); !slices.Equal(got, []string{"dir", "model.pt"}) {
			t.Errorf("readdir after rename: %v", got)
		}
		// A renamed name used again: a new file, not the renamed one.
		put(t, mc, bucket, "r/a", []byte("first"))
		if got, err := os.ReadFile(filepath.Join(dir, "r/a")); err != nil || string(got) != "first" {
			t.Errorf("r/a: %q, %v", got, err)
		}
		if err := os.Rename(filepath.Join(dir, "r/a"), filepath.Join(dir, "r/b")); err != nil {
			t.Error(err)
		}
		put(t, mc, bucket, "r/a", []byte("second"))
		if got, err := os.ReadFile(filepath.Join(dir, "r/a")); err != nil || string(got) != "second" {
			t.Errorf("the renamed name used again: %q, %v", got, err)
		}
		wantObj(t, mc, bucket, dir, "r/b", []byte("first"))
		// Into another directory.
		if err := os.Rename(filepath.Join(ck, "model.pt"), filepath.Join(dir, "final.pt")); err != nil {
			t.Error(err)
		}
		wantObj(t, mc, bucket, dir, "final.pt", data)
		wantGone(t, mc, bucket, "ck/model.pt")
		// Directories are not renamed.
		if err := os.Rename(filepath.Join(ck, "dir"), filepath.Join(ck, "dir2")); !errors.Is(err, syscall.EXDEV) {
			t.Errorf("rename of a directory: %v, want EXDEV", err)
		}
	})
}

// openDeletedIn reports whether this process holds open an unlinked
// file that was in dir.
func openDeletedIn(dir string) bool {
	fds, _ := os.ReadDir("/proc/self/fd")
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && strings.HasPrefix(target, dir+"/") && strings.HasSuffix(target, " (deleted)") {
			return true
		}
	}
	return false
}

// TestWritingFileVisible: a file being written, not yet uploaded, is
// listed and found by name, also after the metadata TTL has passed.
func TestWritingFileVisible(t *testing.T) {
	mc, bucket := newBucket(t)
	put(t, mc, bucket, "d/old", []byte("old"))
	opts := baseOptions(bucket)
	opts.MetadataTTL = 300 * time.Millisecond
	dir, _ := mountT(t, opts)
	path := filepath.Join(dir, "d/new")
	bounded(t, 20*time.Second, "writing", func() {
		f, err := os.Create(path)
		if err != nil {
			t.Error(err)
			return
		}
		defer f.Close()
		if _, err := f.Write([]byte("12345")); err != nil {
			t.Error(err)
			return
		}
		time.Sleep(2 * opts.MetadataTTL)
		ents, err := os.ReadDir(filepath.Join(dir, "d"))
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		if err != nil || !slices.Equal(names, []string{"new", "old"}) && !slices.Equal(names, []string{"old", "new"}) {
			t.Errorf("listing while writing: %v, %v; want old and new", names, err)
		}
		if st, err := os.Stat(path); err != nil || st.Size() != 5 {
			t.Errorf("stat while writing, after the TTL: %v, %v", st, err)
		}
		if err := f.Close(); err != nil {
			t.Error(err)
		}
		wantObj(t, mc, bucket, dir, "d/new", []byte("12345"))
	})
}
