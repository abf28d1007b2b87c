// Tests of the directory origin: the conformance suite plus what only a
// filesystem can get wrong (escapes, symlinks, atomicity, dropped-in files).
package fs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.RunOrigin(t, func(t *testing.T) store.Origin { return newTestOrigin(t, t.TempDir()) })
}

func newTestOrigin(t *testing.T, root string) *Origin {
	t.Helper()
	o, err := New(Options{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	return o
}

// fixture is an origin over a fresh Root with one bucket "bkt".
func fixture(t *testing.T) (*Origin, string) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "root")
	o := newTestOrigin(t, root)
	if err := o.MakeBucket(context.Background(), "bkt"); err != nil {
		t.Fatal(err)
	}
	return o, root
}

func put(t *testing.T, o *Origin, key, data string) store.ObjectInfo {
	t.Helper()
	info, err := o.Put(context.Background(), "bkt", key, strings.NewReader(data), int64(len(data)), store.ObjectMeta{})
	if err != nil {
		t.Fatalf("Put(%s): %v", key, err)
	}
	return info
}

func listKeys(t *testing.T, o *Origin, opts store.ListOptions) []string {
	t.Helper()
	p, err := o.List(context.Background(), "bkt", opts)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, obj := range p.Objects {
		keys = append(keys, obj.Key)
	}
	return keys
}

// treeOf returns every path under dir (relative), to prove nothing was
// created or left behind.
func treeOf(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && p != dir {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	return out
}

func TestInvalidKeysNeverTouchDisk(t *testing.T) {
	o, root := fixture(t)
	ctx := context.Background()
	outside := filepath.Dir(root)
	before := treeOf(t, outside)
	for _, key := range []string{"..", "../escape", "a/../../escape", "a/..", "./a", "a/./b", "/abs",
		"//abs", "a//b", "nul\x00byte", "/", "bad\xffutf8", strings.Repeat("s", 256) + "/x"} {
		if _, err := o.Put(ctx, "bkt", key, strings.NewReader("x"), 1, store.ObjectMeta{}); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("Put(%q) = %v, want ErrInvalidKey", key, err)
		}
		if _, err := o.Stat(ctx, "bkt", key); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("Stat(%q) = %v, want ErrInvalidKey", key, err)
		}
		if _, _, err := o.Get(ctx, "bkt", key, store.ReadRange{Length: -1}); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("Get(%q) = %v, want ErrInvalidKey", key, err)
		}
		if err := o.Delete(ctx, "bkt", key); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("Delete(%q) = %v, want ErrInvalidKey", key, err)
		}
	}
	for _, bucket := range []string{"..", ".granary", "../x", "a/b", "bkt/.."} {
		if err := o.MakeBucket(ctx, bucket); !errors.Is(err, store.ErrInvalidBucketName) {
			t.Errorf("MakeBucket(%q) = %v, want ErrInvalidBucketName", bucket, err)
		}
		if _, err := o.Stat(ctx, bucket, "k"); !errors.Is(err, store.ErrInvalidBucketName) {
			t.Errorf("Stat(%q, k) = %v, want ErrInvalidBucketName", bucket, err)
		}
	}
	if after := treeOf(t, outside); !slices.Equal(before, after) {
		t.Fatalf("invalid names changed the disk:\nbefore %v\nafter  %v", before, after)
	}
}

func TestSymlinksCannotEscape(t *testing.T) {
	o, root := fixture(t)
	ctx := context.Background()
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret"), []byte("top secret"), 0o644)
	bdir := filepath.Join(root, "bkt")
	must(t, os.Symlink(filepath.Join(outside, "secret"), filepath.Join(bdir, "abs-link")))
	must(t, os.Symlink("../../"+filepath.Base(outside)+"/secret", filepath.Join(bdir, "rel-link")))
	must(t, os.Symlink(outside, filepath.Join(bdir, "dir-link")))
	must(t, os.MkdirAll(filepath.Join(root, "other"), 0o755))
	os.WriteFile(filepath.Join(root, "other", "x"), []byte("other bucket"), 0o644)
	must(t, os.Symlink("../other/x", filepath.Join(bdir, "cross-bucket")))
	os.WriteFile(filepath.Join(bdir, "real"), []byte("real"), 0o644)
	must(t, os.Symlink("real", filepath.Join(bdir, "inner-link")))
	must(t, os.Symlink(outside, filepath.Join(root, "evilbucket")))

	for _, key := range []string{"abs-link", "rel-link", "dir-link/secret", "cross-bucket"} {
		if _, err := o.Stat(ctx, "bkt", key); !errors.Is(err, store.ErrNoSuchKey) {
			t.Errorf("Stat(%s) = %v, want ErrNoSuchKey", key, err)
		}
		if _, _, err := o.Get(ctx, "bkt", key, store.ReadRange{Length: -1}); !errors.Is(err, store.ErrNoSuchKey) {
			t.Errorf("Get(%s) = %v, want ErrNoSuchKey", key, err)
		}
	}
	if _, err := o.Put(ctx, "bkt", "dir-link/planted", strings.NewReader("x"), 1, store.ObjectMeta{}); err == nil {
		t.Error("Put through a symlink to outside succeeded")
	}
	if _, err := os.Stat(filepath.Join(outside, "planted")); err == nil {
		t.Fatal("a Put wrote outside the bucket")
	}
	if got := listKeys(t, o, store.ListOptions{}); !slices.Equal(got, []string{"inner-link", "real"}) {
		t.Errorf("listing = %v, want only the file and the link inside the bucket", got)
	}
	if err := o.StatBucket(ctx, "evilbucket"); !errors.Is(err, store.ErrNoSuchBucket) {
		t.Errorf("StatBucket(symlink to outside) = %v, want ErrNoSuchBucket", err)
	}
	buckets, _ := o.ListBuckets(ctx)
	if len(buckets) != 2 || buckets[0].Name != "bkt" || buckets[1].Name != "other" {
		t.Errorf("ListBuckets = %v, want bkt and other only", buckets)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

type brokenReader struct{ n int }

func (b *brokenReader) Read(p []byte) (int, error) {
	if b.n <= 0 {
		return 0, errors.New("connection reset")
	}
	k := min(len(p), b.n)
	b.n -= k
	return k, nil
}

func TestFailedPutLeavesNothing(t *testing.T) {
	o, root := fixture(t)
	ctx := context.Background()
	put(t, o, "keep/me", "original")
	before := treeOf(t, root)
	bodies := []struct {
		r    io.Reader
		size int64
	}{
		{&brokenReader{n: 300 << 10}, -1},
		{&brokenReader{n: 10}, 1 << 20},
		{strings.NewReader("short"), 100},
	}
	for _, key := range []string{"new/deep/obj", "keep/me"} {
		for _, b := range bodies {
			if _, err := o.Put(ctx, "bkt", key, b.r, b.size, store.ObjectMeta{}); err == nil {
				t.Fatalf("Put(%s) of a bad body succeeded", key)
			}
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := o.Put(cancelled, "bkt", "new/x", strings.NewReader("data"), 4, store.ObjectMeta{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Put with a cancelled context = %v", err)
	}
	if after := treeOf(t, root); !slices.Equal(before, after) {
		t.Fatalf("failed puts changed the tree:\nbefore %v\nafter  %v", before, after)
	}
	got, _ := os.ReadFile(filepath.Join(root, "bkt", "keep", "me"))
	if string(got) != "original" {
		t.Fatalf("failed overwrite left %q", got)
	}
}

func TestDroppedInFiles(t *testing.T) {
	o, root := fixture(t)
	ctx := context.Background()
	p := filepath.Join(root, "bkt", "drop", "labels.json")
	must(t, os.MkdirAll(filepath.Dir(p), 0o755))
	must(t, os.WriteFile(p, []byte(`{"a":1}`), 0o644))

	st1, err := o.Stat(ctx, "bkt", "drop/labels.json")
	if err != nil {
		t.Fatal(err)
	}
	st2, _ := o.Stat(ctx, "bkt", "drop/labels.json")
	if st1.ETag == "" || st1.ETag != st2.ETag || st1.ContentType != "application/json" || st1.Size != 7 {
		t.Fatalf("dropped file: %+v then %+v; want a stable ETag, application/json, 7 bytes", st1, st2)
	}
	p0, _ := o.List(ctx, "bkt", store.ListOptions{})
	if len(p0.Objects) != 1 || p0.Objects[0].ETag != st1.ETag {
		t.Fatalf("listing %+v disagrees with Stat ETag %s", p0.Objects, st1.ETag)
	}

	// Same size, new mtime: a new version.
	must(t, os.WriteFile(p, []byte(`{"b":2}`), 0o644))
	must(t, os.Chtimes(p, time.Time{}, st1.LastModified.Add(time.Second)))
	st3, _ := o.Stat(ctx, "bkt", "drop/labels.json")
	if st3.ETag == st1.ETag {
		t.Fatalf("rewritten file kept ETag %s", st1.ETag)
	}
	// Another size: a new version too.
	must(t, os.WriteFile(p, []byte(`{"c":333}`), 0o644))
	if st4, _ := o.Stat(ctx, "bkt", "drop/labels.json"); st4.ETag == st3.ETag || st4.Size != 9 {
		t.Fatalf("resized file: %+v (previous ETag %s)", st4, st3.ETag)
	}

	// An object put through the origin and then overwritten behind its
	// back: the sidecar is stale and must not be believed.
	info, err := o.Put(ctx, "bkt", "model.bin", strings.NewReader("weights"), 7, store.ObjectMeta{ContentType: "text/plain"})
	if err != nil {
		t.Fatal(err)
	}
	mp := filepath.Join(root, "bkt", "model.bin")
	must(t, os.WriteFile(mp, []byte("WEIGHTS"), 0o644))
	must(t, os.Chtimes(mp, time.Time{}, info.LastModified.Add(2*time.Second)))
	st5, _ := o.Stat(ctx, "bkt", "model.bin")
	if st5.ETag == info.ETag || st5.ContentType == "text/plain" {
		t.Fatalf("stale sidecar believed: %+v (put ETag %s)", st5, info.ETag)
	}
	if _, _, err := o.Get(ctx, "bkt", "model.bin", store.ReadRange{Length: -1, ETag: info.ETag}); !errors.Is(err, store.ErrPreconditionFailed) {
		t.Fatalf("Get with the pre-rewrite ETag = %v, want ErrPreconditionFailed", err)
	}
}

func TestSidecarsHidden(t *testing.T) {
	o, root := fixture(t)
	ctx := context.Background()
	put(t, o, "a", "1")
	put(t, o, "b/c", "2")
	if _, err := os.Stat(filepath.Join(root, hiddenDir)); err != nil {
		t.Fatalf("no sidecar area: %v", err)
	}
	buckets, _ := o.ListBuckets(ctx)
	if len(buckets) != 1 || buckets[0].Name != "bkt" {
		t.Fatalf("ListBuckets = %v, want only bkt", buckets)
	}
	if got := listKeys(t, o, store.ListOptions{}); !slices.Equal(got, []string{"a", "b/c"}) {
		t.Fatalf("listing = %v", got)
	}
	if err := o.StatBucket(ctx, hiddenDir); !errors.Is(err, store.ErrInvalidBucketName) {
		t.Fatalf("StatBucket(%s) = %v", hiddenDir, err)
	}
	if entries, _ := os.ReadDir(filepath.Join(root, stagingDir)); len(entries) != 0 {
		t.Fatalf("staging area not empty after puts: %v", entries)
	}
}

func TestFileDirectoryConflict(t *testing.T) {
	o, _ := fixture(t)
	ctx := context.Background()
	put(t, o, "a", "file a")
	put(t, o, "x/y", "file x/y")
	for _, key := range []string{"a/b", "a/", "x", "x/y/z"} {
		_, err := o.Put(ctx, "bkt", key, strings.NewReader(""), 0, store.ObjectMeta{})
		if !errors.Is(err, store.ErrInvalidKey) || !strings.Contains(err.Error(), "prefix") {
			t.Errorf("Put(%s) = %v, want ErrInvalidKey explaining the conflict", key, err)
		}
	}
	if got := listKeys(t, o, store.ListOptions{}); !slices.Equal(got, []string{"a", "x/y"}) {
		t.Fatalf("listing after conflicts = %v", got)
	}
}

func TestDeletePrunesEmptyDirs(t *testing.T) {
	o, root := fixture(t)
	ctx := context.Background()
	put(t, o, "p/q/r", "1")
	put(t, o, "p/s", "2")
	must(t, o.Delete(ctx, "bkt", "p/q/r"))
	if _, err := os.Stat(filepath.Join(root, "bkt", "p", "q")); !os.IsNotExist(err) {
		t.Fatalf("empty p/q not pruned: %v", err)
	}
	must(t, o.Delete(ctx, "bkt", "p/s"))
	if got := treeOf(t, filepath.Join(root, "bkt")); len(got) != 0 {
		t.Fatalf("bucket dir holds %v after deleting everything", got)
	}
	if _, err := os.Stat(filepath.Join(root, "bkt")); err != nil {
		t.Fatalf("bucket directory pruned: %v", err)
	}
}

func TestRemoveBucketIgnoresEmptyDirs(t *testing.T) {
	o, root := fixture(t)
	ctx := context.Background()
	must(t, os.MkdirAll(filepath.Join(root, "bkt", "e1", "e2"), 0o755))
	if err := o.RemoveBucket(ctx, "bkt"); err != nil {
		t.Fatalf("RemoveBucket(only empty dirs) = %v", err)
	}
	must(t, o.MakeBucket(ctx, "bkt"))
	put(t, o, "deep/down/obj", "x")
	if err := o.RemoveBucket(ctx, "bkt"); !errors.Is(err, store.ErrBucketNotEmpty) {
		t.Fatalf("RemoveBucket(deep object) = %v", err)
	}
}

func TestStaleTempFilesRemovedAtStart(t *testing.T) {
	root := t.TempDir()
	o := newTestOrigin(t, root)
	o.Close()
	old := filepath.Join(root, stagingDir, "put-old")
	young := filepath.Join(root, stagingDir, "put-young")
	must(t, os.WriteFile(old, []byte("x"), 0o644))
	must(t, os.WriteFile(young, []byte("x"), 0o644))
	must(t, os.Chtimes(old, time.Time{}, time.Now().Add(-2*staleTmpAge)))
	newTestOrigin(t, root)
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("old temp file kept: %v", err)
	}
	if _, err := os.Stat(young); err != nil {
		t.Errorf("young temp file removed: %v", err)
	}
}

func TestListLargeDirectory(t *testing.T) {
	o, root := fixture(t)
	dir := filepath.Join(root, "bkt", "many")
	must(t, os.MkdirAll(dir, 0o755))
	var want []string
	for i := range 1500 {
		name := strings.Repeat("f", i%7) + string(rune('a'+i%26)) + strings.Repeat("0", i%3) + "-" + string(rune('A'+i/26%26))
		if slices.Contains(want, "many/"+name) {
			continue
		}
		must(t, os.WriteFile(filepath.Join(dir, name), nil, 0o644))
		want = append(want, "many/"+name)
	}
	slices.Sort(want)
	page, err := o.List(context.Background(), "bkt", store.ListOptions{Prefix: "many/"})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Objects) != min(1000, len(want)) || page.IsTruncated != (len(want) > 1000) {
		t.Fatalf("default page: %d objects, truncated %v (of %d)", len(page.Objects), page.IsTruncated, len(want))
	}
	var got []string
	after := ""
	for {
		p, err := o.List(context.Background(), "bkt", store.ListOptions{Prefix: "many/", After: after, MaxKeys: 97})
		if err != nil {
			t.Fatal(err)
		}
		for _, obj := range p.Objects {
			got = append(got, obj.Key)
		}
		if !p.IsTruncated {
			break
		}
		after = p.NextAfter
	}
	if !slices.Equal(got, want) {
		t.Fatalf("paged listing of %d files returned %d, or out of order", len(want), len(got))
	}
}

func TestGetBeyondEnd(t *testing.T) {
	o, _ := fixture(t)
	put(t, o, "k", "0123456789")
	if _, _, err := o.Get(context.Background(), "bkt", "k", store.ReadRange{Offset: 11, Length: -1}); err == nil {
		t.Fatal("Get past the end succeeded")
	}
	rc, _, err := o.Get(context.Background(), "bkt", "k", store.ReadRange{Offset: 10, Length: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if b, _ := io.ReadAll(rc); len(b) != 0 {
		t.Fatalf("Get at the end returned %q", b)
	}
}

// TestPutDeleteSameDirectory races puts and deletes of siblings, so
// deletes prune the directory puts are about to rename into.
func TestPutDeleteSameDirectory(t *testing.T) {
	o, _ := fixture(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 50 {
				key := fmt.Sprintf("shared/sub/w%d-%d", w, i)
				if _, err := o.Put(ctx, "bkt", key, strings.NewReader("x"), 1, store.ObjectMeta{}); err != nil {
					t.Errorf("Put(%s): %v", key, err)
					return
				}
				if err := o.Delete(ctx, "bkt", key); err != nil {
					t.Errorf("Delete(%s): %v", key, err)
					return
				}
			}
		})
	}
	wg.Go(func() {
		for i := range 50 {
			if _, err := o.Put(ctx, "bkt", "shared/", strings.NewReader(""), 0, store.ObjectMeta{}); err != nil {
				t.Errorf("Put(shared/): %v", err)
			}
			if i%2 == 1 {
				o.Delete(ctx, "bkt", "shared/")
			}
		}
	})
	wg.Wait()
	if got := listKeys(t, o, store.ListOptions{}); len(got) != 0 {
		t.Fatalf("left behind: %v", got)
	}
}
