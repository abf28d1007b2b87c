// Origin conformance cases for single objects: put, get, ranges,
// metadata, failed bodies, deletes and missing objects.
package storetest

import (
	"bytes"
	"errors"
	"io"
	"maps"
	"strings"
	"testing"

	"github.com/granary-dev/granary/store"
)

func testPutGetStat(t *testing.T, o store.Origin) {
	b := newBucket(t, o)
	data := randomBytes(100<<10+17, 1)
	put := putBytes(t, o, b, "obj.bin", data, store.ObjectMeta{ContentType: "application/x-test"})
	st := mustStat(t, o, b, "obj.bin")
	if st.ETag != put.ETag || st.Size != int64(len(data)) || st.Key != "obj.bin" || st.Bucket != b {
		t.Fatalf("Stat = %+v, want key obj.bin, ETag %s, size %d", st, put.ETag, len(data))
	}
	if st.LastModified.IsZero() {
		t.Error("Stat: zero LastModified")
	}
	if strings.Contains(st.ETag, `"`) {
		t.Errorf("ETag %s carries quotes", st.ETag)
	}
	got, info := getBytes(t, o, b, "obj.bin", store.ReadRange{Length: -1})
	if !bytes.Equal(got, data) {
		t.Fatalf("Get returned %d bytes, differing from the %d put", len(got), len(data))
	}
	if info.ETag != st.ETag || info.Size != st.Size || info.ContentType != "application/x-test" {
		t.Fatalf("Get info = %+v, want ETag %s, size %d, type application/x-test", info, st.ETag, st.Size)
	}
}

func testRanges(t *testing.T, o store.Origin) {
	b := newBucket(t, o)
	data := randomBytes(10000, 2)
	put := putBytes(t, o, b, "r", data, store.ObjectMeta{})
	n := int64(len(data))
	for _, c := range []struct {
		off, length int64
		want        []byte
	}{
		{0, -1, data},
		{0, 1, data[:1]},
		{1234, 1000, data[1234:2234]},
		{5000, -1, data[5000:]},
		{n - 1, -1, data[n-1:]},
		{n - 10, 100, data[n-10:]},    // past the end: clamped
		{0, n, data},                  // exactly the object
		{4096, 4096, data[4096:8192]}, // aligned
	} {
		got, info := getBytes(t, o, b, "r", store.ReadRange{Offset: c.off, Length: c.length, ETag: put.ETag})
		if !bytes.Equal(got, c.want) {
			t.Errorf("range %d+%d: got %d bytes, want %d (or different content)", c.off, c.length, len(got), len(c.want))
		}
		if info.Size != n || info.ETag != put.ETag {
			t.Errorf("range %d+%d: info size %d ETag %s, want the whole object's %d %s",
				c.off, c.length, info.Size, info.ETag, n, put.ETag)
		}
	}
	rc, _, err := o.Get(opCtx(t), b, "r", store.ReadRange{Offset: 10, Length: 10, ETag: "0123456789abcdef0123456789abcdef"})
	if !errors.Is(err, store.ErrPreconditionFailed) {
		if rc != nil {
			rc.Close()
		}
		t.Fatalf("Get with a stale ETag = %v, want ErrPreconditionFailed from Get itself", err)
	}
}

func testOverwrite(t *testing.T, o store.Origin) {
	b := newBucket(t, o)
	first := putBytes(t, o, b, "k", []byte("first version"), store.ObjectMeta{})
	second := putBytes(t, o, b, "k", []byte("second, longer version"), store.ObjectMeta{})
	if first.ETag == second.ETag {
		t.Fatalf("overwrite with new content kept ETag %s", first.ETag)
	}
	got, info := getBytes(t, o, b, "k", store.ReadRange{Length: -1})
	if string(got) != "second, longer version" || info.ETag != second.ETag {
		t.Fatalf("after overwrite Get = %q (ETag %s), want the second version (ETag %s)", got, info.ETag, second.ETag)
	}
	_, _, err := o.Get(opCtx(t), b, "k", store.ReadRange{Length: -1, ETag: first.ETag})
	if !errors.Is(err, store.ErrPreconditionFailed) {
		t.Fatalf("Get with the overwritten ETag = %v, want ErrPreconditionFailed", err)
	}
}

func testMetadata(t *testing.T, o store.Origin) {
	b := newBucket(t, o)
	meta := store.ObjectMeta{
		ContentType:        "image/jpeg",
		ContentEncoding:    "gzip",
		ContentDisposition: `attachment; filename="cat.jpg"`,
		ContentLanguage:    "en-GB",
		CacheControl:       "max-age=3600",
		User:               map[string]string{"epoch": "7", "dataset-name": "imagenet", "Mixed-Case": "v"},
	}
	wantUser := map[string]string{"epoch": "7", "dataset-name": "imagenet", "mixed-case": "v"}
	put := putBytes(t, o, b, "m.jpg", []byte("jpeg bytes"), meta)
	check := func(what string, got store.ObjectMeta) {
		t.Helper()
		if got.ContentType != meta.ContentType || got.ContentEncoding != meta.ContentEncoding ||
			got.ContentDisposition != meta.ContentDisposition || got.ContentLanguage != meta.ContentLanguage ||
			got.CacheControl != meta.CacheControl {
			t.Errorf("%s: system metadata %+v, want %+v", what, got, meta)
		}
		if !maps.Equal(got.User, wantUser) {
			t.Errorf("%s: user metadata %v, want %v", what, got.User, wantUser)
		}
	}
	check("Put", put.ObjectMeta)
	check("Stat", mustStat(t, o, b, "m.jpg").ObjectMeta)
	_, info := getBytes(t, o, b, "m.jpg", store.ReadRange{Offset: 1, Length: 2})
	check("Get", info.ObjectMeta)

	putBytes(t, o, b, "plain", []byte("x"), store.ObjectMeta{})
	if st := mustStat(t, o, b, "plain"); st.ContentType != "application/octet-stream" || len(st.User) != 0 {
		t.Errorf("object put without metadata: type %q, user %v; want application/octet-stream and none", st.ContentType, st.User)
	}
}

func testShortBody(t *testing.T, o store.Origin) {
	b := newBucket(t, o)
	ctx := opCtx(t)
	_, err := o.Put(ctx, b, "short", bytes.NewReader(make([]byte, 500)), 1000, store.ObjectMeta{})
	if !errors.Is(err, store.ErrIncompleteBody) {
		t.Fatalf("Put(500 of 1000 bytes) = %v, want ErrIncompleteBody", err)
	}
	wantNoKey(t, o, b, "short")

	old := putBytes(t, o, b, "keep", []byte("original content"), store.ObjectMeta{ContentType: "text/plain"})
	_, err = o.Put(ctx, b, "keep", bytes.NewReader([]byte("new")), 100, store.ObjectMeta{})
	if !errors.Is(err, store.ErrIncompleteBody) {
		t.Fatalf("Put(3 of 100 bytes) over an object = %v, want ErrIncompleteBody", err)
	}
	got, info := getBytes(t, o, b, "keep", store.ReadRange{Length: -1})
	if string(got) != "original content" || info.ETag != old.ETag || info.ContentType != "text/plain" {
		t.Fatalf("after a failed overwrite: %q ETag %s type %q; want the original", got, info.ETag, info.ContentType)
	}
	assertKeys(t, o, b, "keep")
}

// failingReader yields n bytes and then err.
type failingReader struct {
	n   int
	err error
}

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n == 0 {
		return 0, f.err
	}
	k := min(len(p), f.n)
	clear(p[:k])
	f.n -= k
	return k, nil
}

var errBodyBroke = errors.New("storetest: body broke")

func testFailingBody(t *testing.T, o store.Origin) {
	b := newBucket(t, o)
	ctx := opCtx(t)
	old := putBytes(t, o, b, "keep", []byte("still here"), store.ObjectMeta{})
	for _, size := range []int64{4096, -1} {
		for _, key := range []string{"new", "keep"} {
			_, err := o.Put(ctx, b, key, &failingReader{n: 1000, err: errBodyBroke}, size, store.ObjectMeta{})
			if err == nil {
				t.Fatalf("Put(%s, size %d) of a failing body succeeded", key, size)
			}
		}
	}
	wantNoKey(t, o, b, "new")
	got, info := getBytes(t, o, b, "keep", store.ReadRange{Length: -1})
	if string(got) != "still here" || info.ETag != old.ETag {
		t.Fatalf("after failed overwrites: %q ETag %s; want the original", got, info.ETag)
	}
	assertKeys(t, o, b, "keep")
}

func testUnknownSize(t *testing.T, o store.Origin) {
	b := newBucket(t, o)
	data := randomBytes(300<<10, 3)
	info, err := o.Put(opCtx(t), b, "u", io.MultiReader(bytes.NewReader(data[:1000]), bytes.NewReader(data[1000:])), -1, store.ObjectMeta{})
	if err != nil {
		t.Fatalf("Put(size -1): %v", err)
	}
	if info.Size != int64(len(data)) || info.ETag == "" {
		t.Fatalf("Put(size -1) = size %d ETag %q, want size %d", info.Size, info.ETag, len(data))
	}
	if st := mustStat(t, o, b, "u"); st.Size != int64(len(data)) || st.ETag != info.ETag {
		t.Fatalf("Stat = size %d ETag %s, want %d %s", st.Size, st.ETag, len(data), info.ETag)
	}
	if got, _ := getBytes(t, o, b, "u", store.ReadRange{Length: -1}); !bytes.Equal(got, data) {
		t.Fatal("Get after Put(size -1) returned other bytes")
	}
}

// testLargeObject puts objects large enough to take the multipart path of
// origins that have one (12 MiB: above the 5 MiB S3 minimum part size).
func testLargeObject(t *testing.T, o store.Origin) {
	b := newBucket(t, o)
	ctx := opCtx(t)
	data := randomBytes(12<<20+3, 4)
	for _, size := range []int64{int64(len(data)), -1} {
		info, err := o.Put(ctx, b, "big", bytes.NewReader(data), size, store.ObjectMeta{ContentType: "application/x-big"})
		if err != nil {
			t.Fatalf("Put(12 MiB, size %d): %v", size, err)
		}
		got, gi := getBytes(t, o, b, "big", store.ReadRange{Length: -1, ETag: info.ETag})
		if !bytes.Equal(got, data) || gi.ContentType != "application/x-big" {
			t.Fatalf("Get(12 MiB, size %d): %d bytes, type %q", size, len(got), gi.ContentType)
		}
		part, _ := getBytes(t, o, b, "big", store.ReadRange{Offset: 6 << 20, Length: 1 << 20})
		if !bytes.Equal(part, data[6<<20:7<<20]) {
			t.Fatalf("ranged Get across parts returned other bytes")
		}
	}
	before := mustStat(t, o, b, "big")
	if _, err := o.Put(ctx, b, "big", bytes.NewReader(data[:7<<20]), int64(len(data)), store.ObjectMeta{}); !errors.Is(err, store.ErrIncompleteBody) {
		t.Fatalf("Put(7 of 12 MiB) = %v, want ErrIncompleteBody", err)
	}
	if _, err := o.Put(ctx, b, "big", &failingReader{n: 11 << 20, err: errBodyBroke}, -1, store.ObjectMeta{}); err == nil {
		t.Fatal("Put of a body failing after 11 MiB succeeded")
	}
	if after := mustStat(t, o, b, "big"); after.ETag != before.ETag || after.Size != before.Size {
		t.Fatalf("failed large puts changed the object: %+v -> %+v", before, after)
	}
}

func testZeroBytes(t *testing.T, o store.Origin) {
	b := newBucket(t, o)
	ctx := opCtx(t)
	for key, size := range map[string]int64{"empty": 0, "empty-unknown-size": -1} {
		info, err := o.Put(ctx, b, key, bytes.NewReader(nil), size, store.ObjectMeta{})
		if err != nil || info.Size != 0 || info.ETag == "" {
			t.Fatalf("Put(empty, size %d) = %+v, %v", size, info, err)
		}
		if st := mustStat(t, o, b, key); st.Size != 0 || st.ETag != info.ETag {
			t.Fatalf("Stat(empty) = %+v", st)
		}
		if got, gi := getBytes(t, o, b, key, store.ReadRange{Length: -1, ETag: info.ETag}); len(got) != 0 || gi.Size != 0 {
			t.Fatalf("Get(empty) = %d bytes, size %d", len(got), gi.Size)
		}
	}
	assertKeys(t, o, b, "empty", "empty-unknown-size")
}

func testDelete(t *testing.T, o store.Origin) {
	b := newBucket(t, o)
	ctx := opCtx(t)
	putBytes(t, o, b, "d/e/f", []byte("x"), store.ObjectMeta{})
	putBytes(t, o, b, "d/g", []byte("y"), store.ObjectMeta{})
	mustDelete(t, o, b, "d/e/f")
	wantNoKey(t, o, b, "d/e/f")
	assertKeys(t, o, b, "d/g")
	mustDelete(t, o, b, "d/e/f") // again: missing is not an error
	mustDelete(t, o, b, "never-was")
	mustDelete(t, o, b, "d") // a prefix, not an object
	assertKeys(t, o, b, "d/g")
	if err := o.Delete(ctx, "st-no-such-bucket-x1", "k"); !errors.Is(err, store.ErrNoSuchBucket) {
		t.Fatalf("Delete in a missing bucket = %v, want ErrNoSuchBucket", err)
	}
	putBytes(t, o, b, "d/e/f", []byte("again"), store.ObjectMeta{}) // its directory may have been pruned
	if got, _ := getBytes(t, o, b, "d/e/f", store.ReadRange{Length: -1}); string(got) != "again" {
		t.Fatalf("re-put after delete: %q", got)
	}
}

func testMissing(t *testing.T, o store.Origin) {
	b := newBucket(t, o)
	ctx := opCtx(t)
	putBytes(t, o, b, "present/x", []byte("x"), store.ObjectMeta{})
	for _, key := range []string{"absent", "present", "present/x/y", "present/"} {
		wantNoKey(t, o, b, key)
		if rc, _, err := o.Get(ctx, b, key, store.ReadRange{Length: -1}); !errors.Is(err, store.ErrNoSuchKey) {
			if rc != nil {
				rc.Close()
			}
			t.Errorf("Get(%s) = %v, want ErrNoSuchKey", key, err)
		}
	}
	const nb = "st-no-such-bucket-x2"
	if _, err := o.Stat(ctx, nb, "k"); !errors.Is(err, store.ErrNoSuchBucket) {
		t.Errorf("Stat in a missing bucket = %v, want ErrNoSuchBucket", err)
	}
	if _, _, err := o.Get(ctx, nb, "k", store.ReadRange{Length: -1}); !errors.Is(err, store.ErrNoSuchBucket) {
		t.Errorf("Get in a missing bucket = %v, want ErrNoSuchBucket", err)
	}
	if _, err := o.Put(ctx, nb, "k", bytes.NewReader([]byte("x")), 1, store.ObjectMeta{}); !errors.Is(err, store.ErrNoSuchBucket) {
		t.Errorf("Put in a missing bucket = %v, want ErrNoSuchBucket", err)
	}
	if _, err := o.List(ctx, nb, store.ListOptions{}); !errors.Is(err, store.ErrNoSuchBucket) {
		t.Errorf("List of a missing bucket = %v, want ErrNoSuchBucket", err)
	}
	if err := o.StatBucket(ctx, nb); !errors.Is(err, store.ErrNoSuchBucket) {
		t.Errorf("StatBucket(missing) = %v, want ErrNoSuchBucket", err)
	}
}
