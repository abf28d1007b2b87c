// Engine tests of multipart uploads and write modes, over MinIO.
package gateway

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/granary-dev/granary/store"
)

// upload sends data as a multipart upload in parts of partSize through the
// engine and returns the completed object's info.
func (r *rig) upload(key string, data []byte, partSize int) store.ObjectInfo {
	r.t.Helper()
	ctx := context.Background()
	id, err := r.e.CreateUpload(ctx, r.bucket, key, store.ObjectMeta{ContentType: "application/x-ckpt"})
	if err != nil {
		r.t.Fatal(err)
	}
	var parts []store.CompletePart
	var etags []string
	for n, off := 1, 0; off < len(data); n, off = n+1, off+partSize {
		b := data[off:min(off+partSize, len(data))]
		p, err := r.e.UploadPart(ctx, r.bucket, key, id, n, bytes.NewReader(b), int64(len(b)))
		if err != nil {
			r.t.Fatalf("part %d: %v", n, err)
		}
		sum := md5.Sum(b)
		if p.ETag != hex.EncodeToString(sum[:]) {
			r.t.Fatalf("part %d ETag %s, want its MD5", n, p.ETag)
		}
		parts = append(parts, store.CompletePart{Number: n, ETag: p.ETag})
		etags = append(etags, p.ETag)
	}
	info, err := r.e.CompleteUpload(ctx, r.bucket, key, id, parts)
	if err != nil {
		r.t.Fatal(err)
	}
	if want, _ := store.MultipartETag(etags); info.ETag != want {
		r.t.Fatalf("ETag %s, want %s", info.ETag, want)
	}
	return info
}

// waitFills waits for the cache fills of completed uploads to end.
func (r *rig) waitFills() {
	r.e.fills.Wait()
}

func TestWriteThroughMultipartFillsCache(t *testing.T) {
	r := newRig(t, rigOptions{chunk: 1 << 20, fresh: Freshness{Mode: Immutable}, tee: true})
	data := randBytes(t, 12<<20+12345)
	gets, stats := r.originGets(), r.originStats()
	info := r.upload("ckpt/shard-0", data, 5<<20)
	if info.Size != int64(len(data)) {
		t.Fatalf("size %d, want %d", info.Size, len(data))
	}
	r.waitFills()
	if got := r.read("ckpt/shard-0", nil); !bytes.Equal(got, data) {
		t.Fatal("restored bytes differ")
	}
	if got := r.read("ckpt/shard-0", &Range{Start: 5<<20 - 10, End: 10<<20 + 10}); !bytes.Equal(got, data[5<<20-10:10<<20+11]) {
		t.Fatal("range across parts differs")
	}
	if r.originGets() != gets || r.originStats() != stats {
		t.Fatalf("fill or restore read the origin: %d gets, %d stats", r.originGets()-gets, r.originStats()-stats)
	}
	uploads, err := r.e.tees.store.ListUploads(r.bucket, store.UploadListOptions{})
	if err != nil || len(uploads.Uploads) != 0 {
		t.Fatalf("tees left behind: %+v %v", uploads, err)
	}
}

func TestMultipartAbortDropsTee(t *testing.T) {
	r := newRig(t, rigOptions{tee: true})
	ctx := context.Background()
	id, err := r.e.CreateUpload(ctx, r.bucket, "k", store.ObjectMeta{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.e.UploadPart(ctx, r.bucket, "k", id, 1, strings.NewReader("abc"), 3); err != nil {
		t.Fatal(err)
	}
	if err := r.e.AbortUpload(ctx, r.bucket, "k", id); err != nil {
		t.Fatal(err)
	}
	if _, err := r.e.UploadPart(ctx, r.bucket, "k", id, 2, strings.NewReader("abc"), 3); !errors.Is(err, store.ErrNoSuchUpload) {
		t.Fatalf("part after abort: %v, want ErrNoSuchUpload", err)
	}
	uploads, err := r.e.tees.store.ListUploads(r.bucket, store.UploadListOptions{})
	if err != nil || len(uploads.Uploads) != 0 {
		t.Fatalf("tee left behind: %+v %v", uploads, err)
	}
}

func TestMultipartBadCompletionKeepsCacheCold(t *testing.T) {
	r := newRig(t, rigOptions{tee: true})
	ctx := context.Background()
	id, err := r.e.CreateUpload(ctx, r.bucket, "k", store.ObjectMeta{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := r.e.UploadPart(ctx, r.bucket, "k", id, 1, strings.NewReader("abc"), 3)
	if err != nil {
		t.Fatal(err)
	}
	bad := []store.CompletePart{{Number: 2, ETag: p.ETag}, {Number: 1, ETag: p.ETag}}
	if _, err := r.e.CompleteUpload(ctx, r.bucket, "k", id, bad); !errors.Is(err, store.ErrInvalidPartOrder) {
		t.Fatalf("out of order: %v", err)
	}
	if _, err := r.e.UploadPart(ctx, r.bucket, "k", id, 0, strings.NewReader("abc"), 3); !errors.Is(err, store.ErrInvalidPartNumber) {
		t.Fatalf("part 0: %v", err)
	}
	info, err := r.e.CompleteUpload(ctx, r.bucket, "k", id, []store.CompletePart{{Number: 1, ETag: p.ETag}})
	if err != nil {
		t.Fatal(err)
	}
	r.waitFills()
	if got := r.read("k", nil); string(got) != "abc" || info.Size != 3 {
		t.Fatalf("got %q (size %d)", got, info.Size)
	}
}

func TestReadOnlyBucket(t *testing.T) {
	r := newRig(t, rigOptions{modes: map[string]WriteMode{"rig": ReadOnly}})
	r.seed("k", []byte("data"))
	ctx := context.Background()
	if _, err := r.e.Put(ctx, r.bucket, "k2", strings.NewReader("x"), 1, store.ObjectMeta{}); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("put: %v", err)
	}
	if err := r.e.Delete(ctx, r.bucket, "k"); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("delete: %v", err)
	}
	if _, err := r.e.CreateUpload(ctx, r.bucket, "k3", store.ObjectMeta{}); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("create upload: %v", err)
	}
	if _, err := r.e.Copy(ctx, r.bucket, "k", r.bucket, "k4", nil); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("copy: %v", err)
	}
	if err := r.e.DeleteBucket(ctx, r.bucket); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("delete bucket: %v", err)
	}
	if got := r.read("k", nil); string(got) != "data" {
		t.Fatalf("read %q", got)
	}
	if !r.e.Persisted(r.bucket, "k") {
		t.Fatal("a read-only bucket's object reported unpersisted")
	}
}

func TestWriteThroughPutFillsCache(t *testing.T) {
	r := newRig(t, rigOptions{chunk: 1 << 20, fresh: Freshness{Mode: Immutable}, tee: true})
	data := randBytes(t, 3<<20+777)
	ctx := context.Background()
	info, err := r.e.Put(ctx, r.bucket, "ckpt/single", bytes.NewReader(data), int64(len(data)), store.ObjectMeta{})
	if err != nil {
		t.Fatal(err)
	}
	r.waitFills()
	if !r.inRAM(info) {
		t.Fatal("a write-through PUT of 4 chunks did not fill the cache")
	}
	gets := r.originGets()
	if got := r.read("ckpt/single", nil); !bytes.Equal(got, data) {
		t.Fatal("restored bytes differ")
	}
	if r.originGets() != gets {
		t.Fatalf("the restore read the origin %d times", r.originGets()-gets)
	}
	// A PUT whose body ends early fails and leaves no tee behind.
	if _, err := r.e.Put(ctx, r.bucket, "ckpt/short", bytes.NewReader(data[:2<<20]), int64(len(data)), store.ObjectMeta{}); err == nil {
		t.Fatal("a short body was accepted")
	}
	uploads, err := r.e.tees.store.ListUploads(r.bucket, store.UploadListOptions{})
	if err != nil || len(uploads.Uploads) != 0 {
		t.Fatalf("tees left behind: %+v %v", uploads, err)
	}
}

// A restore that starts the moment a save returns reads the save's tee,
// not the origin, even when the origin stored the PUT as a multipart
// upload of its own (over its largest single PUT: its ETag then is not the
// body's MD5); the fill that follows puts every chunk on the disk tier too.
func TestWriteThroughPutRestoresAtOnce(t *testing.T) {
	r := newRig(t, rigOptions{chunk: 1 << 20, fresh: Freshness{Mode: Immutable}, tee: true,
		partSize: 5 << 20, singlePut: 5 << 20})
	data := randBytes(t, 12<<20+4321)
	gets, stats := r.originGets(), r.originStats()
	info, err := r.e.Put(context.Background(), r.bucket, "ckpt/big", bytes.NewReader(data), int64(len(data)), store.ObjectMeta{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(info.ETag, "-") {
		t.Fatalf("origin ETag %q: the PUT was not stored as a multipart upload, the case under test", info.ETag)
	}
	if got := r.read("ckpt/big", &Range{Start: 3 << 20, End: -1}); !bytes.Equal(got, data[3<<20:]) {
		t.Fatal("restored bytes differ")
	}
	if got := r.read("ckpt/big", nil); !bytes.Equal(got, data) {
		t.Fatal("restored bytes differ")
	}
	if r.originGets() != gets || r.originStats() != stats {
		t.Fatalf("the restore read the origin: %d gets, %d stats", r.originGets()-gets, r.originStats()-stats)
	}
	r.waitFills()
	if !r.inRAM(info) {
		t.Fatal("the fill left chunks out of RAM")
	}
	r.e.filler.close() // writes what is queued
	if held := r.disk.Held(r.bucket, "ckpt/big", info.ETag); held != info.Size {
		t.Fatalf("disk tier holds %d bytes of %d", held, info.Size)
	}
}

// A completion repeated on a node that did not make the first one (in a
// cluster, or after a restart) answers as the first did, while the
// object is still the one the listed parts made.
func TestCompleteAgainOnAnotherNode(t *testing.T) {
	first := newRig(t, rigOptions{})
	other := newRig(t, rigOptions{})
	ctx := context.Background()
	b := first.bucket
	id, err := first.e.CreateUpload(ctx, b, "obj", store.ObjectMeta{})
	if err != nil {
		t.Fatal(err)
	}
	var parts []store.CompletePart
	for n, data := range [][]byte{randBytes(t, 5<<20), []byte("tail")} {
		p, err := first.e.UploadPart(ctx, b, "obj", id, n+1, bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, store.CompletePart{Number: n + 1, ETag: p.ETag})
	}
	done, err := first.e.CompleteUpload(ctx, b, "obj", id, parts)
	if err != nil {
		t.Fatal(err)
	}
	again, err := other.e.CompleteUpload(ctx, b, "obj", id, parts)
	if err != nil || again.ETag != done.ETag || again.Size != done.Size {
		t.Fatalf("completing again on another node: %+v, %v; first %+v", again, err, done)
	}
	if _, err := other.e.CompleteUpload(ctx, b, "obj", id, parts[:1]); !errors.Is(err, store.ErrNoSuchUpload) {
		t.Fatalf("completing again with other parts: %v, want ErrNoSuchUpload", err)
	}
	if _, err := other.e.CompleteUpload(ctx, b, "elsewhere", id, parts); !errors.Is(err, store.ErrNoSuchUpload) {
		t.Fatalf("completing again as another key: %v, want ErrNoSuchUpload", err)
	}
	if _, err := first.e.Put(ctx, b, "obj", strings.NewReader("replaced"), 8, store.ObjectMeta{}); err != nil {
		t.Fatal(err)
	}
	if _, err := other.e.CompleteUpload(ctx, b, "obj", id, parts); !errors.Is(err, store.ErrNoSuchUpload) {
		t.Fatalf("completing again once the object was replaced: %v, want ErrNoSuchUpload", err)
	}
}
