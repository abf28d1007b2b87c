// Multipart conformance: run by RunOrigin for every origin that implements
// store.Multipart. This file: the case list and the helpers; the cases are
// in origin_multipart_*.go.
//
// Only what S3 specifies and MinIO (the reference) does is tested. Where
// the two differ, the suite accepts either: MinIO answers AbortUpload of
// an unknown upload with success, S3 with NoSuchUpload; MinIO lists the
// uploads of a prefix only when the prefix is a whole key, so prefixes
// are used only that way.
package storetest

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/granary-dev/granary/store"
)

// mib is the size of the parts that must reach S3's minimum part size.
const mib = 1 << 20

// testMultipart runs the multipart cases, or skips for an origin without
// store.Multipart.
func testMultipart(t *testing.T, o store.Origin) {
	mp, ok := o.(store.Multipart)
	if !ok {
		t.Skip("origin does not implement store.Multipart")
	}
	cases := []struct {
		name string
		run  func(t *testing.T, o store.Origin, mp store.Multipart)
	}{
		{"ThreeParts", mpThreeParts},
		{"ReplacePart", mpReplacePart},
		{"SubsetOfParts", mpSubsetOfParts},
		{"EmptyLastPart", mpEmptyLastPart},
		{"PartRanges", mpPartRanges},
		{"ConcurrentParts", mpConcurrentParts},
		{"UnknownUpload", mpUnknownUpload},
		{"OtherKey", mpOtherKey},
		{"CompletionErrors", mpCompletionErrors},
		{"PartNumbers", mpPartNumbers},
		{"EndedUploads", mpEndedUploads},
		{"MissingBucket", mpMissingBucket},
		{"ShortBody", mpShortBody},
		{"ListParts", mpListParts},
		{"ListUploads", mpListUploads},
		{"ListUploadsPaging", mpListUploadsPaging},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(t, o, mp) })
	}
}

// --- helpers -----------------------------------------------------------

// mpNew starts an upload and aborts it (best effort) when the test ends,
// before its bucket is dropped: an origin may refuse to remove a bucket
// with uploads in progress.
func mpNew(t *testing.T, mp store.Multipart, bucket, key string, meta store.ObjectMeta) string {
	t.Helper()
	id, err := mp.NewUpload(opCtx(t), bucket, key, meta)
	if err != nil {
		t.Fatalf("NewUpload(%s/%s): %v", bucket, key, err)
	}
	if id == "" {
		t.Fatalf("NewUpload(%s/%s) returned an empty upload ID", bucket, key)
	}
	t.Cleanup(func() {
		// t.Context is done by now.
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		mp.AbortUpload(ctx, bucket, key, id)
	})
	return id
}

// mpPut uploads data as part number and checks the part's info.
func mpPut(t *testing.T, mp store.Multipart, bucket, key, id string, number int, data []byte) store.PartInfo {
	t.Helper()
	p, err := mp.PutPart(opCtx(t), bucket, key, id, number, bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatalf("PutPart(%s/%s, part %d, %d bytes): %v", bucket, key, number, len(data), err)
	}
	if p.Number != number || p.Size != int64(len(data)) || p.ETag != md5Hex(data) {
		t.Fatalf("PutPart(%s/%s, part %d, %d bytes) = %+v, want number %d, size %d, ETag %s",
			bucket, key, number, len(data), p, number, len(data), md5Hex(data))
	}
	return p
}

// mpComplete completes an upload from parts and checks the ETag against
// S3's rule.
func mpComplete(t *testing.T, mp store.Multipart, bucket, key, id string, parts ...store.PartInfo) store.ObjectInfo {
	t.Helper()
	info, err := mp.CompleteUpload(opCtx(t), bucket, key, id, completion(parts...))
	if err != nil {
		t.Fatalf("CompleteUpload(%s/%s, %d parts): %v", bucket, key, len(parts), err)
	}
	var size int64
	for _, p := range parts {
		size += p.Size
	}
	if want := wantETag(t, parts...); info.ETag != want || info.Size != size || info.Bucket != bucket || info.Key != key {
		t.Fatalf("CompleteUpload(%s/%s) = %+v, want ETag %s, size %d", bucket, key, info, want, size)
	}
	return info
}

// completion lists parts as a completion names them.
func completion(parts ...store.PartInfo) []store.CompletePart {
	cps := make([]store.CompletePart, len(parts))
	for i, p := range parts {
		cps[i] = store.CompletePart{Number: p.Number, ETag: p.ETag}
	}
	return cps
}

// wantETag is the ETag of an object completed from parts.
func wantETag(t *testing.T, parts ...store.PartInfo) string {
	t.Helper()
	etags := make([]string, len(parts))
	for i, p := range parts {
		etags[i] = p.ETag
	}
	et, err := store.MultipartETag(etags)
	if err != nil {
		t.Fatal(err)
	}
	return et
}

// mpAllParts pages through the upload's parts, maxParts at a time,
// checking the page invariants, and returns them all.
func mpAllParts(t *testing.T, mp store.Multipart, bucket, key, id string, maxParts int) []store.PartInfo {
	t.Helper()
	var all []store.PartInfo
	opts := store.PartListOptions{MaxParts: maxParts}
	for pages := 0; ; pages++ {
		if pages > 100 {
			t.Fatalf("ListParts(%s/%s): no end after 100 pages", bucket, key)
		}
		page, err := mp.ListParts(opCtx(t), bucket, key, id, opts)
		if err != nil {
			t.Fatalf("ListParts(%s/%s, %+v): %v", bucket, key, opts, err)
		}
		if maxParts > 0 && len(page.Parts) > maxParts {
			t.Fatalf("ListParts(%+v) returned %d parts", opts, len(page.Parts))
		}
		all = append(all, page.Parts...)
		if !page.IsTruncated {
			return all
		}
		if page.NextAfter <= opts.After {
			t.Fatalf("ListParts(%+v): truncated page with NextAfter %d", opts, page.NextAfter)
		}
		opts.After = page.NextAfter
	}
}

// wantParts asserts that the upload holds exactly parts (by number, ETag
// and size).
func wantParts(t *testing.T, mp store.Multipart, bucket, key, id string, parts ...store.PartInfo) {
	t.Helper()
	got := mpAllParts(t, mp, bucket, key, id, 0)
	ok := len(got) == len(parts)
	for i := 0; ok && i < len(got); i++ {
		g, w := got[i], parts[i]
		ok = g.Number == w.Number && g.ETag == w.ETag && g.Size == w.Size && !g.LastModified.IsZero()
	}
	if !ok {
		t.Fatalf("upload %s/%s holds parts %+v, want %+v", bucket, key, got, parts)
	}
}

// wantNoUpload asserts that err is ErrNoSuchUpload.
func wantNoUpload(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, store.ErrNoSuchUpload) {
		t.Errorf("%s = %v, want ErrNoSuchUpload", what, err)
	}
}

// wantAbortGone asserts the answer to an abort of an upload that does not
// exist: ErrNoSuchUpload (S3) or success (MinIO).
func wantAbortGone(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil && !errors.Is(err, store.ErrNoSuchUpload) {
		t.Errorf("%s = %v, want ErrNoSuchUpload or success", what, err)
	}
}

// wantObject asserts that bucket/key holds exactly data under etag.
func wantObject(t *testing.T, o store.Origin, bucket, key string, data []byte, etag string) {
	t.Helper()
	got, info := getBytes(t, o, bucket, key, store.ReadRange{Length: -1})
	if !bytes.Equal(got, data) || info.ETag != etag || info.Size != int64(len(data)) {
		t.Fatalf("%s/%s: %d bytes (equal %v), ETag %s, size %d; want %d bytes, ETag %s",
			bucket, key, len(got), bytes.Equal(got, data), info.ETag, info.Size, len(data), etag)
	}
}

func md5Hex(data []byte) string {
	sum := md5.Sum(data)
	return hex.EncodeToString(sum[:])
}

// concat joins byte slices.
func concat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
