// Multipart conformance cases that complete uploads: the object's bytes,
// ETag, size and metadata, replaced parts, subsets of parts, an empty last
// part and parts uploaded concurrently.
package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"

	"github.com/granary-dev/granary/store"
)

func mpThreeParts(t *testing.T, o store.Origin, mp store.Multipart) {
	b := newBucket(t, o)
	const key = "ckpt/model.bin"
	meta := store.ObjectMeta{
		ContentType: "application/x-checkpoint", CacheControl: "no-store", ContentDisposition: "attachment",
		User: map[string]string{"step": "1200", "Run-Name": "r1"},
	}
	wantUser := map[string]string{"step": "1200", "run-name": "r1"}
	id := mpNew(t, mp, b, key, meta)
	d1, d2, d3 := randomBytes(5*mib, 11), randomBytes(5*mib, 12), randomBytes(1*mib, 13)
	parts := []store.PartInfo{
		mpPut(t, mp, b, key, id, 1, d1), mpPut(t, mp, b, key, id, 2, d2), mpPut(t, mp, b, key, id, 3, d3),
	}
	info := mpComplete(t, mp, b, key, id, parts...)
	data := concat(d1, d2, d3)
	checkMeta := func(what string, got store.ObjectInfo) {
		t.Helper()
		if got.ContentType != meta.ContentType || got.CacheControl != meta.CacheControl ||
			got.ContentDisposition != meta.ContentDisposition || !maps.Equal(got.User, wantUser) {
			t.Errorf("%s: metadata %+v, want that of NewUpload %+v", what, got.ObjectMeta, meta)
		}
	}
	checkMeta("CompleteUpload", info)
	st := mustStat(t, o, b, key)
	if st.ETag != info.ETag || st.Size != int64(len(data)) || st.LastModified.IsZero() {
		t.Fatalf("Stat = %+v, want ETag %s, size %d", st, info.ETag, len(data))
	}
	checkMeta("Stat", st)
	wantObject(t, o, b, key, data, info.ETag)
	p1, p2 := int64(5*mib), int64(10*mib) // where parts 2 and 3 start
	for _, r := range []store.ReadRange{
		{Offset: p1 - 100, Length: 200},         // across parts 1 and 2
		{Offset: p1 - 10, Length: p2 - p1 + 20}, // all of part 2 and a little of 1 and 3
		{Offset: p1, Length: p2 - p1},           // exactly part 2
		{Offset: p2 + 5, Length: -1},            // the tail of part 3
		{Offset: p2 - 1, Length: 2},
	} {
		r.ETag = info.ETag
		got, gi := getBytes(t, o, b, key, r)
		end := int64(len(data))
		if r.Length >= 0 {
			end = r.Offset + r.Length
		}
		if !bytes.Equal(got, data[r.Offset:end]) || gi.Size != int64(len(data)) {
			t.Errorf("Get(%+v): %d bytes (size %d), differing from the object's", r, len(got), gi.Size)
		}
		checkMeta(fmt.Sprintf("Get(%+v)", r), gi)
	}
	page, err := o.List(opCtx(t), b, store.ListOptions{Prefix: "ckpt/"})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Objects) != 1 || page.Objects[0].Key != key || page.Objects[0].ETag != info.ETag || page.Objects[0].Size != int64(len(data)) {
		t.Fatalf("List after completion = %+v, want %s with ETag %s, size %d", page.Objects, key, info.ETag, len(data))
	}
}

// mpReplacePart uploads part 2 twice: the second upload replaces the
// first, whose ETag no longer completes the upload.
func mpReplacePart(t *testing.T, o store.Origin, mp store.Multipart) {
	b := newBucket(t, o)
	id := mpNew(t, mp, b, "k", store.ObjectMeta{})
	d1 := randomBytes(5*mib, 21)
	p1 := mpPut(t, mp, b, "k", id, 1, d1)
	first := mpPut(t, mp, b, "k", id, 2, []byte("first version of part two"))
	second := mpPut(t, mp, b, "k", id, 2, []byte("second, longer version of part two"))
	wantParts(t, mp, b, "k", id, p1, second)
	if _, err := mp.CompleteUpload(opCtx(t), b, "k", id, completion(p1, first)); !errors.Is(err, store.ErrInvalidPart) {
		t.Fatalf("CompleteUpload with the replaced part's ETag = %v, want ErrInvalidPart", err)
	}
	info := mpComplete(t, mp, b, "k", id, p1, second)
	wantObject(t, o, b, "k", concat(d1, []byte("second, longer version of part two")), info.ETag)
}

// mpSubsetOfParts completes with parts 1 and 3 of 1, 2 and 3: part 2 is
// left out of the object.
func mpSubsetOfParts(t *testing.T, o store.Origin, mp store.Multipart) {
	b := newBucket(t, o)
	id := mpNew(t, mp, b, "k", store.ObjectMeta{})
	d1 := randomBytes(5*mib, 31)
	p1 := mpPut(t, mp, b, "k", id, 1, d1)
	mpPut(t, mp, b, "k", id, 2, []byte("left out"))
	p3 := mpPut(t, mp, b, "k", id, 3, []byte("part three"))
	info := mpComplete(t, mp, b, "k", id, p1, p3)
	wantObject(t, o, b, "k", concat(d1, []byte("part three")), info.ETag)
	assertKeys(t, o, b, "k")
}

// mpEmptyLastPart completes with a last part of 0 bytes: S3 sets no
// minimum size on the last part.
func mpEmptyLastPart(t *testing.T, o store.Origin, mp store.Multipart) {
	b := newBucket(t, o)
	id := mpNew(t, mp, b, "k", store.ObjectMeta{})
	d1 := randomBytes(5*mib, 41)
	p1 := mpPut(t, mp, b, "k", id, 1, d1)
	p2 := mpPut(t, mp, b, "k", id, 2, nil)
	info := mpComplete(t, mp, b, "k", id, p1, p2)
	wantObject(t, o, b, "k", d1, info.ETag)
}

// mpConcurrentParts uploads parts from parallel goroutines, then
// completes with all of them.
func mpConcurrentParts(t *testing.T, o store.Origin, mp store.Multipart) {
	b := newBucket(t, o)
	id := mpNew(t, mp, b, "k", store.ObjectMeta{ContentType: "text/plain"})
	data := [][]byte{randomBytes(5*mib, 51), randomBytes(5*mib+7, 52), randomBytes(1000, 53)}
	parts := make([]store.PartInfo, len(data))
	errs := make([]error, len(data))
	ctx := opCtx(t)
	var wg sync.WaitGroup
	for i := range data {
		wg.Go(func() {
			parts[i], errs[i] = mp.PutPart(ctx, b, "k", id, i+1, bytes.NewReader(data[i]), int64(len(data[i])))
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("concurrent PutPart(part %d): %v", i+1, err)
		}
		if parts[i].Number != i+1 || parts[i].ETag != md5Hex(data[i]) {
			t.Fatalf("concurrent PutPart(part %d) = %+v, want ETag %s", i+1, parts[i], md5Hex(data[i]))
		}
	}
	wantParts(t, mp, b, "k", id, parts...)
	info := mpComplete(t, mp, b, "k", id, parts...)
	wantObject(t, o, b, "k", concat(data...), info.ETag)
}
