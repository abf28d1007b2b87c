// Tests of multipart uploads in the directory origin: what the conformance
// suite cannot see (restarts, the hidden upload area, atomic replacement,
// upload checks of a filesystem).
package fs

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/granary-dev/granary/store"
)

func md5Hex(b []byte) string {
	sum := md5.Sum(b)
	return hex.EncodeToString(sum[:])
}

// patterned returns n bytes that differ with seed and position.
func patterned(seed byte, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed ^ byte(i*7+i>>9)
	}
	return b
}

// uploadParts starts an upload of key and puts data as its parts,
// returning the ID and the completion list.
func uploadParts(t *testing.T, o *Origin, key string, meta store.ObjectMeta, data ...[]byte) (string, []store.CompletePart) {
	t.Helper()
	ctx := context.Background()
	id, err := o.NewUpload(ctx, "bkt", key, meta)
	if err != nil {
		t.Fatalf("NewUpload(%s): %v", key, err)
	}
	var list []store.CompletePart
	for i, d := range data {
		p, err := o.PutPart(ctx, "bkt", key, id, i+1, bytes.NewReader(d), int64(len(d)))
		if err != nil {
			t.Fatalf("PutPart(%d): %v", i+1, err)
		}
		list = append(list, store.CompletePart{Number: p.Number, ETag: p.ETag})
	}
	return id, list
}

func getAll(t *testing.T, o *Origin, key string, r store.ReadRange) ([]byte, store.ObjectInfo) {
	t.Helper()
	rc, info, err := o.Get(context.Background(), "bkt", key, r)
	if err != nil {
		t.Fatalf("Get(%s): %v", key, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b, info
}

func TestUploadSurvivesRestart(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")
	o, err := New(Options{Root: root})
	must(t, err)
	ctx := context.Background()
	must(t, o.MakeBucket(ctx, "bkt"))
	p1, p2 := patterned(1, store.MinPartSize), patterned(2, 1234)
	meta := store.ObjectMeta{ContentType: "text/csv", User: map[string]string{"origin": "test"}}
	id, list := uploadParts(t, o, "data/table.csv", meta, p1, p2)
	must(t, o.Close())

	o = newTestOrigin(t, root)
	page, err := o.ListUploads(ctx, "bkt", store.UploadListOptions{})
	if err != nil || len(page.Uploads) != 1 || page.Uploads[0].UploadID != id || page.Uploads[0].Key != "data/table.csv" {
		t.Fatalf("ListUploads after restart = %+v, %v", page, err)
	}
	parts, err := o.ListParts(ctx, "bkt", "data/table.csv", id, store.PartListOptions{})
	if err != nil || len(parts.Parts) != 2 || parts.Parts[1].ETag != md5Hex(p2) || parts.Parts[0].Size != int64(len(p1)) {
		t.Fatalf("ListParts after restart = %+v, %v", parts, err)
	}
	info, err := o.CompleteUpload(ctx, "bkt", "data/table.csv", id, list)
	if err != nil {
		t.Fatal(err)
	}
	wantETag, _ := store.MultipartETag([]string{md5Hex(p1), md5Hex(p2)})
	if info.ETag != wantETag || info.Size != int64(len(p1)+len(p2)) || info.ContentType != "text/csv" ||
		info.User["origin"] != "test" || info.Key != "data/table.csv" || info.LastModified.IsZero() {
		t.Fatalf("CompleteUpload = %+v, want ETag %s", info, wantETag)
	}
	got, st := getAll(t, o, "data/table.csv", store.ReadRange{Length: -1})
	if !bytes.Equal(got, slices.Concat(p1, p2)) || st.ETag != wantETag || st.ContentType != "text/csv" {
		t.Fatalf("Get after completion: %d bytes, %+v", len(got), st)
	}
	// Restart again: the object keeps its multipart ETag, the upload is gone.
	must(t, o.Close())
	o = newTestOrigin(t, root)
	if st, err := o.Stat(ctx, "bkt", "data/table.csv"); err != nil || st.ETag != wantETag {
		t.Fatalf("Stat after restart = %+v, %v", st, err)
	}
	if page, _ := o.ListUploads(ctx, "bkt", store.UploadListOptions{}); len(page.Uploads) != 0 {
		t.Fatalf("completed upload still listed: %+v", page.Uploads)
	}
}

func TestMultipartObjectLikeOthers(t *testing.T) {
	o, root := fixture(t)
	ctx := context.Background()
	put(t, o, "dir/plain", "plain")
	p1, p2, p3 := patterned(3, store.MinPartSize), patterned(4, store.MinPartSize), patterned(5, 10)
	id, list := uploadParts(t, o, "dir/multi", store.ObjectMeta{}, p1, p2, p3)
	if entries, _ := os.ReadDir(filepath.Join(root, uploadsDir, id)); len(entries) == 0 {
		t.Fatal("upload keeps nothing under the hidden upload area")
	}
	if got := listKeys(t, o, store.ListOptions{}); !slices.Equal(got, []string{"dir/plain"}) {
		t.Fatalf("listing with an upload in progress = %v", got)
	}
	info, err := o.CompleteUpload(ctx, "bkt", "dir/multi", id, list)
	if err != nil {
		t.Fatal(err)
	}
	page, err := o.List(ctx, "bkt", store.ListOptions{Prefix: "dir/"})
	if err != nil || len(page.Objects) != 2 || page.Objects[0].Key != "dir/multi" ||
		page.Objects[0].ETag != info.ETag || page.Objects[0].Size != info.Size {
		t.Fatalf("listing = %+v, %v; completed %+v", page.Objects, err, info)
	}
	whole := slices.Concat(p1, p2, p3)
	for _, r := range []store.ReadRange{{Offset: store.MinPartSize - 3, Length: 6}, {Offset: 2*store.MinPartSize - 1, Length: -1}} {
		got, st := getAll(t, o, "dir/multi", r)
		end := int64(len(whole))
		if r.Length >= 0 {
			end = r.Offset + r.Length
		}
		if !bytes.Equal(got, whole[r.Offset:end]) || st.ETag != info.ETag {
			t.Fatalf("Get(%+v) = %d bytes, ETag %s", r, len(got), st.ETag)
		}
	}
	if _, _, err := o.Get(ctx, "bkt", "dir/multi", store.ReadRange{Length: -1, ETag: md5Hex(whole)}); !errors.Is(err, store.ErrPreconditionFailed) {
		t.Fatalf("Get with the whole-body MD5 as ETag = %v", err)
	}
	buckets, _ := o.ListBuckets(ctx)
	if len(buckets) != 1 || buckets[0].Name != "bkt" {
		t.Fatalf("ListBuckets = %v", buckets)
	}
	for _, d := range []string{uploadsDir, stagingDir} {
		if entries, _ := os.ReadDir(filepath.Join(root, d)); len(entries) != 0 {
			t.Fatalf("%s holds %v after the completion", d, entries)
		}
	}
	must(t, o.Delete(ctx, "bkt", "dir/multi"))
	must(t, o.Delete(ctx, "bkt", "dir/plain"))
	if _, err := o.Stat(ctx, "bkt", "dir/multi"); !errors.Is(err, store.ErrNoSuchKey) {
		t.Fatalf("Stat after Delete = %v", err)
	}
	if got := treeOf(t, filepath.Join(root, "bkt")); len(got) != 0 {
		t.Fatalf("bucket holds %v after deleting everything", got)
	}
}

// TestCompleteReplacesAtomically reads the key while a completion
// replaces it: every read is the old object or the new one, whole, with
// its own ETag.
func TestCompleteReplacesAtomically(t *testing.T) {
	o, _ := fixture(t)
	ctx := context.Background()
	old := put(t, o, "k", strings.Repeat("old", 1000))
	p1, p2 := patterned(6, store.MinPartSize), patterned(7, 4096)
	id, list := uploadParts(t, o, "k", store.ObjectMeta{}, p1, p2)
	whole := slices.Concat(p1, p2)
	newETag, _ := store.MultipartETag([]string{list[0].ETag, list[1].ETag})
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for !stop.Load() {
				rc, info, err := o.Get(ctx, "bkt", "k", store.ReadRange{Length: -1})
				if err != nil {
					t.Errorf("Get during completion: %v", err)
					return
				}
				b, err := io.ReadAll(rc)
				rc.Close()
				switch {
				case err != nil:
					t.Errorf("read during completion: %v", err)
				case info.ETag == old.ETag && string(b) == strings.Repeat("old", 1000):
				case info.ETag == newETag && bytes.Equal(b, whole):
				default:
					t.Errorf("read %d bytes with ETag %s: neither object", len(b), info.ETag)
				}
				if t.Failed() {
					return
				}
			}
		})
	}
	info, err := o.CompleteUpload(ctx, "bkt", "k", id, list)
	stop.Store(true)
	wg.Wait()
	if err != nil || info.ETag != newETag {
		t.Fatalf("CompleteUpload = %+v, %v", info, err)
	}
	if got, st := getAll(t, o, "k", store.ReadRange{Length: -1}); !bytes.Equal(got, whole) || st.ETag != newETag {
		t.Fatalf("after completion: %d bytes, ETag %s", len(got), st.ETag)
	}
}

func TestFailedCompletionKeepsUpload(t *testing.T) {
	o, _ := fixture(t)
	ctx := context.Background()
	p1 := patterned(8, 100)
	id, list := uploadParts(t, o, "k", store.ObjectMeta{}, p1)
	bad := []store.CompletePart{{Number: 1, ETag: md5Hex([]byte("other"))}}
	if _, err := o.CompleteUpload(ctx, "bkt", "k", id, bad); !errors.Is(err, store.ErrInvalidPart) {
		t.Fatalf("CompleteUpload(wrong ETag) = %v", err)
	}
	// A directory took the key meanwhile: the commit cannot rename over it.
	put(t, o, "k/blocker", "x")
	if _, err := o.CompleteUpload(ctx, "bkt", "k", id, list); !errors.Is(err, store.ErrInvalidKey) {
		t.Fatalf("CompleteUpload onto a directory = %v", err)
	}
	must(t, o.Delete(ctx, "bkt", "k/blocker"))
	if _, err := o.Stat(ctx, "bkt", "k"); !errors.Is(err, store.ErrNoSuchKey) {
		t.Fatalf("failed completions left an object: %v", err)
	}
	// The upload is intact and completes now.
	info, err := o.CompleteUpload(ctx, "bkt", "k", id, list)
	if err != nil || info.Size != 100 {
		t.Fatalf("retried CompleteUpload = %+v, %v", info, err)
	}
	if _, err := o.CompleteUpload(ctx, "bkt", "k", id, list); !errors.Is(err, store.ErrNoSuchUpload) {
		t.Fatalf("second CompleteUpload = %v", err)
	}
}

func TestUploadChecks(t *testing.T) {
	o, _ := fixture(t)
	ctx := context.Background()
	put(t, o, "file", "x")
	cases := []struct {
		bucket, key string
		want        error
	}{
		{"nobucket", "k", store.ErrNoSuchBucket},
		{"bkt", "../escape", store.ErrInvalidKey},
		{"bkt", "a//b", store.ErrInvalidKey},
		{"bkt", "folder/", store.ErrInvalidKey},
		{"bkt", "file/below", store.ErrInvalidKey},
		{".granary", "k", store.ErrInvalidBucketName},
	}
	for _, c := range cases {
		if _, err := o.NewUpload(ctx, c.bucket, c.key, store.ObjectMeta{}); !errors.Is(err, c.want) {
			t.Errorf("NewUpload(%s, %s) = %v, want %v", c.bucket, c.key, err, c.want)
		}
	}
	if _, err := o.ListUploads(ctx, "nobucket", store.UploadListOptions{}); !errors.Is(err, store.ErrNoSuchBucket) {
		t.Errorf("ListUploads(missing bucket) = %v", err)
	}
	// Removing a bucket aborts its uploads.
	must(t, o.MakeBucket(ctx, "gone"))
	id, err := o.NewUpload(ctx, "gone", "k", store.ObjectMeta{})
	must(t, err)
	must(t, o.RemoveBucket(ctx, "gone"))
	must(t, o.MakeBucket(ctx, "gone"))
	if page, _ := o.ListUploads(ctx, "gone", store.UploadListOptions{}); len(page.Uploads) != 0 {
		t.Fatalf("uploads of a removed bucket: %+v", page.Uploads)
	}
	if _, err := o.PutPart(ctx, "gone", "k", id, 1, strings.NewReader("x"), 1); !errors.Is(err, store.ErrNoSuchUpload) {
		t.Fatalf("PutPart to an upload of a removed bucket = %v", err)
	}
}
