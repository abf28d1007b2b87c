// Multipart conformance cases for refusals: unknown and ended uploads,
// upload IDs used on another key, bad completions (each leaving the
// upload usable), part numbers out of range, missing buckets and bodies
// that end early.
package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/granary-dev/granary/store"
)

// mpUnknownUpload uses upload IDs no origin issued, including ones that
// would escape a directory if used as a path.
func mpUnknownUpload(t *testing.T, o store.Origin, mp store.Multipart) {
	b := newBucket(t, o)
	ctx := opCtx(t)
	putBytes(t, o, b, "k", []byte("an object"), store.ObjectMeta{})
	putBytes(t, o, b, "other/x", []byte("another"), store.ObjectMeta{})
	real := mpNew(t, mp, b, "k", store.ObjectMeta{})
	p := mpPut(t, mp, b, "k", real, 1, []byte("real part"))
	cp := []store.CompletePart{{Number: 1, ETag: md5Hex([]byte("x"))}}
	for _, id := range []string{"st-no-such-upload", "0123456789abcdef0123456789abcdef", "../../other", "..", "a/b", "%2e%2e", ""} {
		_, err := mp.PutPart(ctx, b, "k", id, 1, bytes.NewReader([]byte("x")), 1)
		wantNoUpload(t, fmt.Sprintf("PutPart(upload %q)", id), err)
		_, err = mp.ListParts(ctx, b, "k", id, store.PartListOptions{})
		wantNoUpload(t, fmt.Sprintf("ListParts(upload %q)", id), err)
		_, err = mp.CompleteUpload(ctx, b, "k", id, cp)
		wantNoUpload(t, fmt.Sprintf("CompleteUpload(upload %q)", id), err)
		wantAbortGone(t, fmt.Sprintf("AbortUpload(upload %q)", id), mp.AbortUpload(ctx, b, "k", id))
	}
	wantObject(t, o, b, "k", []byte("an object"), md5Hex([]byte("an object")))
	assertKeys(t, o, b, "k", "other/x")
	wantParts(t, mp, b, "k", real, p)
}

// mpOtherKey uses an upload ID with another key and another bucket: it
// is valid for the key it was created for only.
func mpOtherKey(t *testing.T, o store.Origin, mp store.Multipart) {
	b, b2 := newBucket(t, o), newBucket(t, o)
	ctx := opCtx(t)
	id := mpNew(t, mp, b, "a", store.ObjectMeta{})
	p := mpPut(t, mp, b, "a", id, 1, []byte("part of a"))
	for _, at := range []struct{ bucket, key string }{{b, "b"}, {b, "A"}, {b2, "a"}} {
		where := fmt.Sprintf("%s/%s", at.bucket, at.key)
		_, err := mp.PutPart(ctx, at.bucket, at.key, id, 2, bytes.NewReader([]byte("y")), 1)
		wantNoUpload(t, "PutPart(the upload of a, at "+where+")", err)
		_, err = mp.ListParts(ctx, at.bucket, at.key, id, store.PartListOptions{})
		wantNoUpload(t, "ListParts(the upload of a, at "+where+")", err)
		_, err = mp.CompleteUpload(ctx, at.bucket, at.key, id, completion(p))
		wantNoUpload(t, "CompleteUpload(the upload of a, at "+where+")", err)
		wantAbortGone(t, "AbortUpload(the upload of a, at "+where+")", mp.AbortUpload(ctx, at.bucket, at.key, id))
	}
	assertKeys(t, o, b)
	assertKeys(t, o, b2)
	wantParts(t, mp, b, "a", id, p)
	info := mpComplete(t, mp, b, "a", id, p)
	wantObject(t, o, b, "a", []byte("part of a"), info.ETag)
}

// mpCompletionErrors tries completions S3 refuses; each must leave the
// upload as it was, and a proper completion then succeeds.
func mpCompletionErrors(t *testing.T, o store.Origin, mp store.Multipart) {
	b := newBucket(t, o)
	id := mpNew(t, mp, b, "k", store.ObjectMeta{ContentType: "text/plain"})
	p1 := mpPut(t, mp, b, "k", id, 1, []byte("part one"))
	p2 := mpPut(t, mp, b, "k", id, 2, []byte("part two"))
	other := md5Hex([]byte("other"))
	for _, c := range []struct {
		what  string
		parts []store.CompletePart
		want  error
	}{
		{"a small part that is not last", completion(p1, p2), store.ErrEntityTooSmall},
		{"a wrong ETag", []store.CompletePart{{Number: 2, ETag: other}}, store.ErrInvalidPart},
		{"a part never uploaded", []store.CompletePart{{Number: 3, ETag: p1.ETag}}, store.ErrInvalidPart},
		{"no parts", nil, store.ErrInvalidPart},
		{"descending numbers", completion(p2, p1), store.ErrInvalidPartOrder},
		{"a repeated number", completion(p1, p1), store.ErrInvalidPart},
		{"part number 0", []store.CompletePart{{Number: 0, ETag: p1.ETag}, {Number: 2, ETag: p2.ETag}}, store.ErrInvalidPartNumber},
		{"part number 10001", []store.CompletePart{{Number: 2, ETag: p2.ETag}, {Number: 10001, ETag: p1.ETag}}, store.ErrInvalidPartNumber},
	} {
		_, err := mp.CompleteUpload(opCtx(t), b, "k", id, c.parts)
		if !errors.Is(err, c.want) {
			t.Errorf("CompleteUpload with %s = %v, want %v", c.what, err, c.want)
		}
		wantNoKey(t, o, b, "k")
		wantParts(t, mp, b, "k", id, p1, p2)
	}
	info := mpComplete(t, mp, b, "k", id, p2)
	wantObject(t, o, b, "k", []byte("part two"), info.ETag)
	if info.ContentType != "text/plain" {
		t.Errorf("completed object has type %q, want text/plain", info.ContentType)
	}
}

// mpPartNumbers puts parts numbered outside 1..10000, which S3 refuses
// without storing anything, and part 10000, which it takes.
func mpPartNumbers(t *testing.T, o store.Origin, mp store.Multipart) {
	b := newBucket(t, o)
	id := mpNew(t, mp, b, "k", store.ObjectMeta{})
	for _, n := range []int{0, -1, store.MaxPartNumber + 1} {
		_, err := mp.PutPart(opCtx(t), b, "k", id, n, bytes.NewReader([]byte("x")), 1)
		if !errors.Is(err, store.ErrInvalidPartNumber) {
			t.Errorf("PutPart(part %d) = %v, want ErrInvalidPartNumber", n, err)
		}
	}
	wantParts(t, mp, b, "k", id)
	last := mpPut(t, mp, b, "k", id, store.MaxPartNumber, []byte("the last part there can be"))
	wantParts(t, mp, b, "k", id, last)
	info := mpComplete(t, mp, b, "k", id, last)
	wantObject(t, o, b, "k", []byte("the last part there can be"), info.ETag)
}

// mpEndedUploads reuses an aborted and a completed upload: both are gone,
// and touching them changes nothing.
func mpEndedUploads(t *testing.T, o store.Origin, mp store.Multipart) {
	b := newBucket(t, o)
	ctx := opCtx(t)
	aborted := mpNew(t, mp, b, "aborted", store.ObjectMeta{})
	pa := mpPut(t, mp, b, "aborted", aborted, 1, []byte("dropped"))
	if err := mp.AbortUpload(ctx, b, "aborted", aborted); err != nil {
		t.Fatalf("AbortUpload: %v", err)
	}
	done := mpNew(t, mp, b, "done", store.ObjectMeta{})
	pd := mpPut(t, mp, b, "done", done, 1, []byte("kept"))
	info := mpComplete(t, mp, b, "done", done, pd)
	for _, u := range []struct {
		key, id string
		part    store.PartInfo
	}{{"aborted", aborted, pa}, {"done", done, pd}} {
		_, err := mp.PutPart(ctx, b, u.key, u.id, 2, bytes.NewReader([]byte("late")), 4)
		wantNoUpload(t, "PutPart(upload "+u.key+")", err)
		_, err = mp.ListParts(ctx, b, u.key, u.id, store.PartListOptions{})
		wantNoUpload(t, "ListParts(upload "+u.key+")", err)
		_, err = mp.CompleteUpload(ctx, b, u.key, u.id, completion(u.part))
		wantNoUpload(t, "CompleteUpload(upload "+u.key+")", err)
		wantAbortGone(t, "AbortUpload(upload "+u.key+")", mp.AbortUpload(ctx, b, u.key, u.id))
	}
	wantNoKey(t, o, b, "aborted")
	wantObject(t, o, b, "done", []byte("kept"), info.ETag)
	assertKeys(t, o, b, "done")
}

func mpMissingBucket(t *testing.T, o store.Origin, mp store.Multipart) {
	const nb = "st-no-such-bucket-x4"
	if _, err := mp.NewUpload(opCtx(t), nb, "k", store.ObjectMeta{}); !errors.Is(err, store.ErrNoSuchBucket) {
		t.Errorf("NewUpload in a missing bucket = %v, want ErrNoSuchBucket", err)
	}
	if _, err := mp.ListUploads(opCtx(t), nb, store.UploadListOptions{}); !errors.Is(err, store.ErrNoSuchBucket) {
		t.Errorf("ListUploads of a missing bucket = %v, want ErrNoSuchBucket", err)
	}
}

// mpShortBody puts parts whose bodies end early or fail: the part is not
// stored, and a part of that number uploaded before stays as it was.
func mpShortBody(t *testing.T, o store.Origin, mp store.Multipart) {
	b := newBucket(t, o)
	ctx := opCtx(t)
	id := mpNew(t, mp, b, "k", store.ObjectMeta{})
	p1 := mpPut(t, mp, b, "k", id, 1, []byte("the original part one"))
	for _, c := range []struct {
		number int
		have   int
		size   int64
	}{{1, 500, 1000}, {2, 500, 1000}, {1, 2 * mib, 3 * mib}, {3, 0, 10}} {
		_, err := mp.PutPart(ctx, b, "k", id, c.number, bytes.NewReader(make([]byte, c.have)), c.size)
		if !errors.Is(err, store.ErrIncompleteBody) {
			t.Errorf("PutPart(part %d, %d of %d bytes) = %v, want ErrIncompleteBody", c.number, c.have, c.size, err)
		}
	}
	for _, n := range []int{1, 2} {
		if _, err := mp.PutPart(ctx, b, "k", id, n, &failingReader{n: 1000, err: errBodyBroke}, 4096); err == nil {
			t.Errorf("PutPart(part %d) of a failing body succeeded", n)
		}
	}
	wantParts(t, mp, b, "k", id, p1)
	info := mpComplete(t, mp, b, "k", id, p1)
	wantObject(t, o, b, "k", []byte("the original part one"), info.ETag)
}
