// Multipart uploads through minio-go against every origin that takes
// them: a low-level round trip with its listings, minio-go's high-level
// multipart PutObject, UploadPartCopy (ranged and whole, and through
// ComposeObject) and ListMultipartUploads paging and encoding.
package api

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/granary-dev/granary/gateway"
	"github.com/granary-dev/granary/store"
)

// newMultipartEnv is newEnv for a test of multipart uploads: the origin
// must take them (each origin of backends does).
func newMultipartEnv(t *testing.T, b backend) *env {
	t.Helper()
	origin, root := b.open(t)
	if _, ok := origin.(store.Multipart); !ok {
		t.Fatalf("origin %s does not implement store.Multipart", b.name)
	}
	return newEnvOver(t, gateway.Options{Origin: origin}, root, nil)
}

func TestMultipart(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			e := newMultipartEnv(t, b)
			t.Run("RoundTrip", func(t *testing.T) { testMultipartRoundTrip(t, e) })
			t.Run("HighLevelPut", func(t *testing.T) { testMultipartHighLevel(t, e) })
			t.Run("PartCopy", func(t *testing.T) { testPartCopy(t, e) })
			t.Run("PartCopyRaw", func(t *testing.T) { testPartCopyRaw(t, e) })
			t.Run("ListUploads", func(t *testing.T) { testListUploads(t, e) })
			t.Run("Errors", func(t *testing.T) { testMultipartErrors(t, e) })
			t.Run("BadComplete", func(t *testing.T) { testBadComplete(t, e) })
			t.Run("Aborted", func(t *testing.T) { testAbortedUpload(t, e) })
			t.Run("TruncatedPart", func(t *testing.T) { testTruncatedPart(t, e) })
		})
	}
}

func (e *env) core() minio.Core { return minio.Core{Client: e.client} }

// newUpload starts an upload of bucket/key through minio-go.
func (e *env) newUpload(t testing.TB, bucket, key string, opts minio.PutObjectOptions) string {
	t.Helper()
	id, err := e.core().NewMultipartUpload(context.Background(), bucket, key, opts)
	if err != nil || id == "" {
		t.Fatalf("NewMultipartUpload %s/%s: %q, %v", bucket, key, id, err)
	}
	return id
}

// putPart uploads data as part n through minio-go and checks its ETag.
func (e *env) putPart(t testing.TB, bucket, key, id string, n int, data []byte) minio.CompletePart {
	t.Helper()
	p, err := e.core().PutObjectPart(context.Background(), bucket, key, id, n, bytes.NewReader(data),
		int64(len(data)), minio.PutObjectPartOptions{})
	if err != nil {
		t.Fatalf("PutObjectPart %d: %v", n, err)
	}
	if got, want := strings.Trim(p.ETag, `"`), md5Hex(data); got != want {
		t.Fatalf("part %d ETag %q, want %q", n, got, want)
	}
	return minio.CompletePart{PartNumber: n, ETag: p.ETag}
}

func md5Hex(data []byte) string {
	sum := md5.Sum(data)
	return hex.EncodeToString(sum[:])
}

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// partQuery and uploadQuery are the queries of part and upload requests.
func partQuery(n, id string) string { return "partNumber=" + n + "&uploadId=" + url.QueryEscape(id) }
func uploadQuery(id string) string  { return "uploadId=" + url.QueryEscape(id) }

// completeBody renders a CompleteMultipartUpload document.
func completeBody(parts ...minio.CompletePart) []byte {
	var b bytes.Buffer
	b.WriteString(`<CompleteMultipartUpload xmlns="http://s3.amazonaws.com/doc/2006-03-01/">`)
	for _, p := range parts {
		fmt.Fprintf(&b, `<Part><PartNumber>%d</PartNumber><ETag>"%s"</ETag></Part>`, p.PartNumber, strings.Trim(p.ETag, `"`))
	}
	b.WriteString(`</CompleteMultipartUpload>`)
	return b.Bytes()
}

func testMultipartRoundTrip(t *testing.T, e *env) {
	ctx := context.Background()
	core := e.core()
	bucket := e.makeBucket(t, "mp")
	const key = "dir/multi part+key"
	id := e.newUpload(t, bucket, key, minio.PutObjectOptions{ContentType: "application/x-test",
		UserMetadata: map[string]string{"color": "green"}})
	var whole []byte
	var parts []minio.CompletePart
	var etags []string
	sizes := []int{5 << 20, 5<<20 + 1, 1<<20 + 7}
	for i, n := range sizes {
		data := randomBytes(n)
		whole = append(whole, data...)
		parts = append(parts, e.putPart(t, bucket, key, id, i+1, data))
		etags = append(etags, md5Hex(data))
	}
	// The parts, in two pages.
	lp, err := core.ListObjectParts(ctx, bucket, key, id, 0, 2)
	if err != nil {
		t.Fatalf("ListObjectParts: %v", err)
	}
	if len(lp.ObjectParts) != 2 || !lp.IsTruncated || lp.NextPartNumberMarker != 2 {
		t.Fatalf("first page: %d parts, truncated %v, next %d", len(lp.ObjectParts), lp.IsTruncated, lp.NextPartNumberMarker)
	}
	lp2, err := core.ListObjectParts(ctx, bucket, key, id, 2, 2)
	if err != nil || len(lp2.ObjectParts) != 1 || lp2.IsTruncated {
		t.Fatalf("second page: %+v, %v", lp2, err)
	}
	for i, p := range append(lp.ObjectParts, lp2.ObjectParts...) {
		if p.PartNumber != i+1 || p.Size != int64(sizes[i]) || strings.Trim(p.ETag, `"`) != etags[i] || p.LastModified.IsZero() {
			t.Errorf("listed part %d: %+v", i+1, p)
		}
	}
	if !uploadListed(t, e, bucket, key, id) {
		t.Errorf("upload %s not in ListMultipartUploads", id)
	}
	info, err := core.CompleteMultipartUpload(ctx, bucket, key, id, parts, minio.PutObjectOptions{})
	if err != nil {
		t.Fatalf("CompleteMultipartUpload: %v", err)
	}
	wantETag, _ := store.MultipartETag(etags)
	if strings.Trim(info.ETag, `"`) != wantETag {
		t.Errorf("completed ETag %q, want %q", info.ETag, wantETag)
	}
	got, err := e.get(t, bucket, key, minio.GetObjectOptions{})
	if err != nil || sha256Hex(got) != sha256Hex(whole) {
		t.Fatalf("read back %d bytes (want %d), %v", len(got), len(whole), err)
	}
	st, err := e.client.StatObject(ctx, bucket, key, minio.StatObjectOptions{})
	if err != nil || st.Size != int64(len(whole)) || st.ContentType != "application/x-test" ||
		st.Metadata.Get("X-Amz-Meta-Color") != "green" || st.ETag != wantETag {
		t.Errorf("stat: size %d type %q meta %v etag %q, %v", st.Size, st.ContentType, st.Metadata, st.ETag, err)
	}
	if uploadListed(t, e, bucket, key, id) {
		t.Errorf("completed upload %s still listed", id)
	}
	// The CompleteMultipartUploadResult document itself.
	testCompleteResult(t, e, bucket)
}

// testCompleteResult checks every field of a raw completion's answer.
func testCompleteResult(t *testing.T, e *env, bucket string) {
	const key = "raw result"
	id := e.newUpload(t, bucket, key, minio.PutObjectOptions{})
	data := []byte("one small last part")
	p := e.putPart(t, bucket, key, id, 1, data)
	resp, body := e.do(t, rawRequest{method: http.MethodPost, path: "/" + bucket + "/" + escapeKey(key),
		query: uploadQuery(id), body: completeBody(p)})
	var res struct {
		Location, Bucket, Key, ETag string
	}
	if err := xml.Unmarshal(body, &res); err != nil || resp.StatusCode != 200 {
		t.Fatalf("complete: %d %q, %v", resp.StatusCode, body, err)
	}
	wantETag, _ := store.MultipartETag([]string{md5Hex(data)})
	wantLoc := "http://" + e.addr + "/" + bucket + "/" + escapeKey(key)
	if res.Location != wantLoc || res.Bucket != bucket || res.Key != key || res.ETag != `"`+wantETag+`"` {
		t.Errorf("CompleteMultipartUploadResult %+v, want location %q etag %q", res, wantLoc, wantETag)
	}
}

// uploadListed reports whether ListMultipartUploads lists id for key.
func uploadListed(t *testing.T, e *env, bucket, key, id string) bool {
	t.Helper()
	res, err := e.core().ListMultipartUploads(context.Background(), bucket, key, "", "", "", 1000)
	if err != nil {
		t.Fatalf("ListMultipartUploads: %v", err)
	}
	return slices.ContainsFunc(res.Uploads, func(u minio.ObjectMultipartInfo) bool {
		return u.Key == key && u.UploadID == id
	})
}

// testMultipartHighLevel has minio-go cut a 17 MiB object into 5 MiB parts.
func testMultipartHighLevel(t *testing.T, e *env) {
	bucket := e.makeBucket(t, "mphigh")
	data := randomBytes(17<<20 + 5)
	info, err := e.client.PutObject(context.Background(), bucket, "big", bytes.NewReader(data), int64(len(data)),
		minio.PutObjectOptions{PartSize: 5 << 20})
	if err != nil {
		t.Fatalf("PutObject: %v", err)
	}
	if !strings.HasSuffix(strings.Trim(info.ETag, `"`), "-4") {
		t.Errorf("ETag %q is not that of a 4-part upload", info.ETag)
	}
	got, err := e.get(t, bucket, "big", minio.GetObjectOptions{})
	if err != nil || sha256Hex(got) != sha256Hex(data) {
		t.Fatalf("read back %d bytes, %v", len(got), err)
	}
	// The same object streamed (size unknown to minio-go up front).
	_, err = e.client.PutObject(context.Background(), bucket, "streamed", bytes.NewBuffer(data), -1,
		minio.PutObjectOptions{PartSize: 5 << 20})
	if err != nil {
		t.Fatalf("PutObject of unknown size: %v", err)
	}
	got, err = e.get(t, bucket, "streamed", minio.GetObjectOptions{})
	if err != nil || sha256Hex(got) != sha256Hex(data) {
		t.Fatalf("streamed: read back %d bytes, %v", len(got), err)
	}
}

func testPartCopy(t *testing.T, e *env) {
	ctx := context.Background()
	core := e.core()
	bucket := e.makeBucket(t, "mpcopy")
	src := randomBytes(7<<20 + 3)
	small := randomBytes(4000)
	e.put(t, bucket, "src", src, minio.PutObjectOptions{DisableMultipart: true})
	e.put(t, bucket, "small", small, minio.PutObjectOptions{})
	id := e.newUpload(t, bucket, "copied", minio.PutObjectOptions{})
	// Part 1: a range of src (through the cache: read once already).
	if _, err := e.get(t, bucket, "src", minio.GetObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	p1, err := core.CopyObjectPart(ctx, bucket, "src", bucket, "copied", id, 1, 1<<20, 5<<20, nil)
	if err != nil {
		t.Fatalf("CopyObjectPart with range: %v", err)
	}
	// Part 2: the whole of small.
	p2, err := core.CopyObjectPart(ctx, bucket, "small", bucket, "copied", id, 2, 0, -1, nil)
	if err != nil {
		t.Fatalf("CopyObjectPart whole: %v", err)
	}
	want := append(slices.Clone(src[1<<20:6<<20]), small...)
	if strings.Trim(p1.ETag, `"`) != md5Hex(src[1<<20:6<<20]) || strings.Trim(p2.ETag, `"`) != md5Hex(small) {
		t.Errorf("copied part ETags %q %q", p1.ETag, p2.ETag)
	}
	if _, err := core.CompleteMultipartUpload(ctx, bucket, "copied", id, []minio.CompletePart{p1, p2}, minio.PutObjectOptions{}); err != nil {
		t.Fatalf("complete: %v", err)
	}
	got, err := e.get(t, bucket, "copied", minio.GetObjectOptions{})
	if err != nil || sha256Hex(got) != sha256Hex(want) {
		t.Fatalf("copied object: %d bytes, %v", len(got), err)
	}
	// ComposeObject: minio-go's own use of UploadPartCopy.
	other := randomBytes(5<<20 + 11)
	e.put(t, bucket, "other", other, minio.PutObjectOptions{})
	_, err = e.client.ComposeObject(ctx, minio.CopyDestOptions{Bucket: bucket, Object: "composed"},
		minio.CopySrcOptions{Bucket: bucket, Object: "src"}, minio.CopySrcOptions{Bucket: bucket, Object: "other"})
	if err != nil {
		t.Fatalf("ComposeObject: %v", err)
	}
	got, err = e.get(t, bucket, "composed", minio.GetObjectOptions{})
	if err != nil || sha256Hex(got) != sha256Hex(append(slices.Clone(src), other...)) {
		t.Fatalf("composed object: %d bytes, %v", len(got), err)
	}
}

// testPartCopyRaw covers the part copy failures minio-go cannot send.
func testPartCopyRaw(t *testing.T, e *env) {
	bucket := e.makeBucket(t, "mpcopyraw")
	src := randomBytes(3000)
	info := e.put(t, bucket, "src", src, minio.PutObjectOptions{})
	id := e.newUpload(t, bucket, "dst", minio.PutObjectOptions{})
	path, source := "/"+bucket+"/dst", "/"+bucket+"/src"
	cases := []struct {
		name   string
		header http.Header
		status int
		code   string
	}{
		{"range syntax", http.Header{"X-Amz-Copy-Source-Range": {"bytes=5-"}}, 400, "InvalidArgument"},
		{"suffix range", http.Header{"X-Amz-Copy-Source-Range": {"bytes=-5"}}, 400, "InvalidArgument"},
		{"reversed range", http.Header{"X-Amz-Copy-Source-Range": {"bytes=9-5"}}, 400, "InvalidArgument"},
		{"other unit", http.Header{"X-Amz-Copy-Source-Range": {"items=0-5"}}, 400, "InvalidArgument"},
		{"range past end", http.Header{"X-Amz-Copy-Source-Range": {"bytes=0-3000"}}, 416, "InvalidRange"},
		{"if-match", http.Header{"X-Amz-Copy-Source-If-Match": {`"nope"`}}, 412, "PreconditionFailed"},
		{"if-none-match", http.Header{"X-Amz-Copy-Source-If-None-Match": {`"` + info.ETag + `"`}}, 412, "PreconditionFailed"},
		{"if-modified-since", http.Header{"X-Amz-Copy-Source-If-Modified-Since": {"Sat, 01 Jan 2101 00:00:00 GMT"}}, 412, "PreconditionFailed"},
		{"missing source", http.Header{"X-Amz-Copy-Source": {"/" + bucket + "/missing"}}, 404, "NoSuchKey"},
		{"bad source", http.Header{"X-Amz-Copy-Source": {"nobucketslash"}}, 400, "InvalidArgument"},
	}
	for _, c := range cases {
		h := http.Header{"X-Amz-Copy-Source": {source}}
		for k, v := range c.header {
			h[k] = v
		}
		resp, body := e.do(t, rawRequest{method: http.MethodPut, path: path, query: partQuery("1", id), header: h})
		if resp.StatusCode != c.status || errorCode(t, body) != c.code {
			t.Errorf("%s: %d %q, want %d %s", c.name, resp.StatusCode, body, c.status, c.code)
		}
	}
	// Conditions that hold, and a range of exactly the last byte.
	resp, body := e.do(t, rawRequest{method: http.MethodPut, path: path, query: partQuery("1", id), header: http.Header{
		"X-Amz-Copy-Source": {source}, "X-Amz-Copy-Source-If-Match": {`"` + info.ETag + `"`},
		"X-Amz-Copy-Source-Range": {"bytes=2999-2999"}}})
	var res struct{ ETag, LastModified string }
	if err := xml.Unmarshal(body, &res); err != nil || resp.StatusCode != 200 || res.ETag != `"`+md5Hex(src[2999:])+`"` || res.LastModified == "" {
		t.Errorf("part copy with holding conditions: %d %q", resp.StatusCode, body)
	}
}

func testListUploads(t *testing.T, e *env) {
	ctx := context.Background()
	core := e.core()
	bucket := e.makeBucket(t, "mplist")
	keys := []string{"a/1", "a/2", "b/x y", "b/x y", "c"} // two uploads of one key
	ids := map[string][]string{}
	for _, k := range keys {
		ids[k] = append(ids[k], e.newUpload(t, bucket, k, minio.PutObjectOptions{}))
	}
	// Page through all five, two at a time.
	var seen []string
	keyMarker, idMarker := "", ""
	for range 10 {
		res, err := core.ListMultipartUploads(ctx, bucket, "", keyMarker, idMarker, "", 2)
		if err != nil {
			t.Fatalf("ListMultipartUploads: %v", err)
		}
		for _, u := range res.Uploads {
			seen = append(seen, u.Key+"|"+u.UploadID)
		}
		if !res.IsTruncated {
			break
		}
		keyMarker, idMarker = res.NextKeyMarker, res.NextUploadIDMarker
	}
	var want []string
	for _, k := range []string{"a/1", "a/2", "b/x y", "c"} {
		for _, id := range ids[k] {
			want = append(want, k+"|"+id)
		}
	}
	slices.Sort(seen)
	slices.Sort(want)
	if !slices.Equal(seen, want) {
		t.Errorf("paged uploads %q, want %q", seen, want)
	}
	// Delimiter and prefix group keys.
	res, err := core.ListMultipartUploads(ctx, bucket, "", "", "", "/", 1000)
	if err != nil {
		t.Fatal(err)
	}
	var prefixes []string
	for _, p := range res.CommonPrefixes {
		prefixes = append(prefixes, p.Prefix)
	}
	if !slices.Equal(prefixes, []string{"a/", "b/"}) || len(res.Uploads) != 1 || res.Uploads[0].Key != "c" {
		t.Errorf("with delimiter: prefixes %q, uploads %+v", prefixes, res.Uploads)
	}
	// encoding-type=url encodes the keys. (MinIO lists the uploads of a
	// prefix only when it is a whole key, so the prefix is one.)
	resp, body := e.do(t, rawRequest{method: http.MethodGet, path: "/" + bucket, query: "uploads&prefix=b%2Fx%20y&encoding-type=url"})
	if resp.StatusCode != 200 || !bytes.Contains(body, []byte("<Key>b/x%20y</Key>")) ||
		!bytes.Contains(body, []byte("<EncodingType>url</EncodingType>")) {
		t.Errorf("encoding-type=url: %d %s", resp.StatusCode, body)
	}
	for _, q := range []string{"uploads&max-uploads=-1", "uploads&max-uploads=x", "uploads&encoding-type=zip"} {
		resp, body := e.do(t, rawRequest{method: http.MethodGet, path: "/" + bucket, query: q})
		expectError(t, resp, body, 400, "InvalidArgument")
	}
	resp, body = e.do(t, rawRequest{method: http.MethodGet, path: "/no-such-bucket-mp", query: "uploads"})
	expectError(t, resp, body, 404, "NoSuchBucket")
}
