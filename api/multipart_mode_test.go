// Write modes and origin abilities as the client sees them: a read-only
// bucket refuses every write (AccessDenied) and still serves reads; an
// origin that refuses for load answers SlowDown; one without multipart
// answers NotImplemented; x-granary-persisted tells what reached the
// origin; a part copy reads its source as the origin has it now.
package api

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/granary-dev/granary/gateway"
	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/ram"
)

func TestReadOnlyBucket(t *testing.T) {
	origin, root := openS3(t)
	ro := uniqueBucket("ro")
	e := newEnvOver(t, gateway.Options{Origin: origin,
		WriteModes: map[string]gateway.WriteMode{ro: gateway.ReadOnly}}, root, nil)
	ctx := context.Background()
	// CreateBucket is not a write to the bucket's objects.
	if err := e.client.MakeBucket(ctx, ro, minio.MakeBucketOptions{Region: testRegion}); err != nil {
		t.Fatal(err)
	}
	seed := []byte("written before the bucket became read-only")
	if _, err := origin.Put(ctx, ro, "seed", bytes.NewReader(seed), int64(len(seed)), store.ObjectMeta{}); err != nil {
		t.Fatal(err)
	}
	rw := e.makeBucket(t, "rw")
	e.put(t, rw, "src", []byte("source"), minio.PutObjectOptions{})
	upload := e.newUpload(t, rw, "k", minio.PutObjectOptions{}) // an ID that exists, elsewhere
	path := "/" + ro + "/seed"
	for _, rr := range []rawRequest{
		{method: http.MethodPut, path: "/" + ro + "/new", body: []byte("x")},
		{method: http.MethodPut, path: "/" + ro + "/new", header: http.Header{"X-Amz-Copy-Source": {"/" + rw + "/src"}}},
		{method: http.MethodDelete, path: path},
		{method: http.MethodPost, path: path, query: "uploads"},
		{method: http.MethodPut, path: path, query: partQuery("1", upload), body: []byte("x")},
		{method: http.MethodPut, path: path, query: partQuery("1", upload),
			header: http.Header{"X-Amz-Copy-Source": {"/" + rw + "/src"}}},
		{method: http.MethodPost, path: path, query: uploadQuery(upload),
			body: completeBody(minio.CompletePart{PartNumber: 1, ETag: md5Hex(nil)})},
		{method: http.MethodDelete, path: path, query: uploadQuery(upload)},
	} {
		resp, body := e.do(t, rr)
		if resp.StatusCode != 403 || errorCode(t, body) != "AccessDenied" {
			t.Errorf("%s %s?%s: %d %q, want 403 AccessDenied", rr.method, rr.path, rr.query, resp.StatusCode, body)
		}
	}
	// Reads still work, and nothing changed.
	if got, err := e.get(t, ro, "seed", minio.GetObjectOptions{}); err != nil || !bytes.Equal(got, seed) {
		t.Errorf("read-only GET: %q, %v", got, err)
	}
	if _, err := e.client.StatObject(ctx, ro, "new", minio.StatObjectOptions{}); minioCode(err) != "NoSuchKey" {
		t.Errorf("a refused write left an object: %v", err)
	}
	// The other bucket is writable.
	e.put(t, rw, "fine", []byte("ok"), minio.PutObjectOptions{})
}

// refusingMultipart fails every multipart call with err.
type refusingMultipart struct{ err error }

func (m refusingMultipart) NewUpload(context.Context, string, string, store.ObjectMeta) (string, error) {
	return "", m.err
}

func (m refusingMultipart) PutPart(_ context.Context, _, _, _ string, _ int, body io.Reader, _ int64) (store.PartInfo, error) {
	return store.PartInfo{}, m.err
}

func (m refusingMultipart) CompleteUpload(context.Context, string, string, string, []store.CompletePart) (store.ObjectInfo, error) {
	return store.ObjectInfo{}, m.err
}

func (m refusingMultipart) AbortUpload(context.Context, string, string, string) error { return m.err }

func (m refusingMultipart) ListParts(context.Context, string, string, string, store.PartListOptions) (store.PartPage, error) {
	return store.PartPage{}, m.err
}

func (m refusingMultipart) ListUploads(context.Context, string, store.UploadListOptions) (store.UploadPage, error) {
	return store.UploadPage{}, m.err
}

// withMultipart is an origin whose multipart calls go to mp.
type withMultipart struct {
	store.Origin
	store.Multipart
}

// onlyOrigin hides every ability of an origin but store.Origin.
type onlyOrigin struct{ store.Origin }

func TestMultipartOriginRefuses(t *testing.T) {
	base, root := openFS(t)
	cases := []struct {
		name   string
		origin store.Origin
		status int
		code   string
	}{
		{"SlowDown", withMultipart{base, refusingMultipart{store.ErrSlowDown}}, 503, "SlowDown"},
		{"Unsupported", onlyOrigin{base}, 501, "NotImplemented"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnvOver(t, gateway.Options{Origin: c.origin}, root, nil)
			bucket := e.makeBucket(t, "refuse")
			path := "/" + bucket + "/k"
			for _, rr := range []rawRequest{
				{method: http.MethodPost, path: path, query: "uploads"},
				{method: http.MethodPut, path: path, query: partQuery("1", "id"), body: []byte("x")},
				{method: http.MethodPost, path: path, query: uploadQuery("id"),
					body: completeBody(minio.CompletePart{PartNumber: 1, ETag: md5Hex(nil)})},
				{method: http.MethodDelete, path: path, query: uploadQuery("id")},
				{method: http.MethodGet, path: path, query: uploadQuery("id")},
				{method: http.MethodGet, path: "/" + bucket, query: "uploads"},
			} {
				resp, body := e.do(t, rr)
				if resp.StatusCode != c.status || errorCode(t, body) != c.code {
					t.Errorf("%s ?%s: %d %q, want %d %s", rr.method, rr.query, resp.StatusCode, body, c.status, c.code)
				}
			}
		})
	}
}

// pendingOrigin reports one key as not yet persisted, as a write-back log
// does while the key's upload waits.
type pendingOrigin struct {
	store.Origin
	pending string
}

func (p pendingOrigin) Persisted(_, key string) bool { return key != p.pending }

// GetStaged and Flush make pendingOrigin a store.Staging: nothing is
// staged here, and nothing waits to be flushed.
func (pendingOrigin) GetStaged(string, string, store.ReadRange) (io.ReadCloser, error) {
	return nil, store.ErrNotFound
}

func (pendingOrigin) Flush(context.Context, string, string, func(store.FlushStatus)) error {
	return nil
}

func TestPersistedHeader(t *testing.T) {
	base, root := openS3(t)
	po := pendingOrigin{base, "waiting"}
	e := newEnvOver(t, gateway.Options{Origin: po, Staging: po}, root, nil)
	bucket := e.makeBucket(t, "persist")
	e.put(t, bucket, "done", []byte("at the origin"), minio.PutObjectOptions{})
	e.put(t, bucket, "waiting", []byte("not yet"), minio.PutObjectOptions{})
	for key, want := range map[string]string{"done": "true", "waiting": "false"} {
		for _, method := range []string{http.MethodGet, http.MethodHead} {
			resp, body := e.do(t, rawRequest{method: method, path: "/" + bucket + "/" + key})
			if resp.StatusCode != 200 || resp.Header.Get("X-Granary-Persisted") != want {
				t.Errorf("%s %s: %d, x-granary-persisted %q, want %q (%q)", method, key, resp.StatusCode,
					resp.Header.Get("X-Granary-Persisted"), want, body)
			}
		}
	}
	// A plain write-through engine: every object is persisted once acked.
	plain := newEnvOver(t, gateway.Options{Origin: base}, root, nil)
	resp, _ := plain.do(t, rawRequest{method: http.MethodHead, path: "/" + bucket + "/waiting"})
	if resp.StatusCode != 200 || resp.Header.Get("X-Granary-Persisted") != "true" {
		t.Errorf("write-through HEAD: %d, x-granary-persisted %q", resp.StatusCode, resp.Header.Get("X-Granary-Persisted"))
	}
}

// TestPartCopyReadsCurrentSource changes a cached source behind Granary's
// back: a GET within the TTL still serves the cached bytes, but a part
// copy, like S3's, takes the source as the origin has it now.
func TestPartCopyReadsCurrentSource(t *testing.T) {
	origin, root := openS3(t)
	e := newEnvOver(t, gateway.Options{Origin: origin, RAM: ram.New(ram.Options{Capacity: 64 << 20}),
		Freshness: gateway.Freshness{Mode: gateway.TTL, TTL: time.Hour}}, root, nil)
	ctx := context.Background()
	bucket := e.makeBucket(t, "fresh")
	old, cur := randomBytes(70_000), randomBytes(80_000)
	e.put(t, bucket, "src", old, minio.PutObjectOptions{})
	if got, err := e.get(t, bucket, "src", minio.GetObjectOptions{}); err != nil || !bytes.Equal(got, old) {
		t.Fatalf("first read: %d bytes, %v", len(got), err)
	}
	if _, err := origin.Put(ctx, bucket, "src", bytes.NewReader(cur), int64(len(cur)), store.ObjectMeta{}); err != nil {
		t.Fatal(err)
	}
	if got, err := e.get(t, bucket, "src", minio.GetObjectOptions{}); err != nil || !bytes.Equal(got, old) {
		t.Fatalf("the cached version is not served within its TTL (%d bytes, %v): the test proves nothing", len(got), err)
	}
	id := e.newUpload(t, bucket, "dst", minio.PutObjectOptions{})
	p, err := e.core().CopyObjectPart(ctx, bucket, "src", bucket, "dst", id, 1, 0, -1, nil)
	if err != nil {
		t.Fatalf("CopyObjectPart: %v", err)
	}
	if strings.Trim(p.ETag, `"`) != md5Hex(cur) {
		t.Errorf("part copy took the cached version: ETag %s, want md5 %s of the current one", p.ETag, md5Hex(cur))
	}
	if _, err := e.core().CompleteMultipartUpload(ctx, bucket, "dst", id, []minio.CompletePart{p}, minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, err := e.get(t, bucket, "dst", minio.GetObjectOptions{}); err != nil || !bytes.Equal(got, cur) {
		t.Errorf("copied object: %d bytes, %v", len(got), err)
	}
}
