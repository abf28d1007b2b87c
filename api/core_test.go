// The core S3 cases through minio-go, run over both origins: buckets,
// objects with metadata, ranges, conditionals, overrides, copy and delete.
package api

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
)

func TestCore(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			e := newEnv(t, b)
			t.Run("Buckets", func(t *testing.T) { testBuckets(t, e) })
			t.Run("ObjectRoundTrip", func(t *testing.T) { testObjectRoundTrip(t, e) })
			t.Run("Ranges", func(t *testing.T) { testRanges(t, e) })
			t.Run("Conditionals", func(t *testing.T) { testConditionals(t, e) })
			t.Run("Overrides", func(t *testing.T) { testOverrides(t, e) })
			t.Run("Copy", func(t *testing.T) { testCopy(t, e) })
			t.Run("Delete", func(t *testing.T) { testDelete(t, e) })
			t.Run("OddKeys", func(t *testing.T) { testOddKeys(t, e) })
			t.Run("LargeObject", func(t *testing.T) { testLargeObject(t, e) })
		})
	}
}

func testBuckets(t *testing.T, e *env) {
	ctx := context.Background()
	name := e.makeBucket(t, "buckets")
	err := e.client.MakeBucket(ctx, name, minio.MakeBucketOptions{Region: testRegion})
	if code := minioCode(err); code != "BucketAlreadyOwnedByYou" {
		t.Errorf("second MakeBucket: code %q (%v), want BucketAlreadyOwnedByYou", code, err)
	}
	if ok, err := e.client.BucketExists(ctx, name); err != nil || !ok {
		t.Errorf("BucketExists = %v, %v", ok, err)
	}
	if ok, err := e.client.BucketExists(ctx, uniqueBucket("missing")); err != nil || ok {
		t.Errorf("BucketExists(missing) = %v, %v", ok, err)
	}
	list, err := e.client.ListBuckets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(list, func(b minio.BucketInfo) bool { return b.Name == name }) {
		t.Errorf("ListBuckets %v lacks %s", list, name)
	}
	loc, err := e.client.GetBucketLocation(ctx, name)
	if err != nil || loc != testRegion {
		t.Errorf("GetBucketLocation = %q, %v", loc, err)
	}
	if _, err := e.client.GetBucketVersioning(ctx, name); err != nil {
		t.Errorf("GetBucketVersioning: %v", err)
	}
	e.put(t, name, "a", []byte("x"), minio.PutObjectOptions{})
	if code := minioCode(e.client.RemoveBucket(ctx, name)); code != "BucketNotEmpty" {
		t.Errorf("RemoveBucket(non-empty): code %q, want BucketNotEmpty", code)
	}
	if err := e.client.RemoveObject(ctx, name, "a", minio.RemoveObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := e.client.RemoveBucket(ctx, name); err != nil {
		t.Fatalf("RemoveBucket: %v", err)
	}
	if ok, err := e.client.BucketExists(ctx, name); err != nil || ok {
		t.Errorf("BucketExists after removal = %v, %v", ok, err)
	}
	if code := minioCode(e.client.RemoveBucket(ctx, name)); code != "NoSuchBucket" {
		t.Errorf("RemoveBucket(missing): code %q, want NoSuchBucket", code)
	}
}

func testObjectRoundTrip(t *testing.T, e *env) {
	ctx := context.Background()
	bucket := e.makeBucket(t, "roundtrip")
	data := randomBytes(100_000)
	opts := minio.PutObjectOptions{
		ContentType: "image/png", ContentEncoding: "identity", ContentDisposition: `attachment; filename="x.png"`,
		ContentLanguage: "fr", CacheControl: "max-age=60",
		UserMetadata: map[string]string{"Epoch": "7", "dataset-name": "imagenet"},
	}
	up := e.put(t, bucket, "dir/obj.png", data, opts)
	got, err := e.get(t, bucket, "dir/obj.png", minio.GetObjectOptions{})
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("get: %d bytes, %v; want the %d put", len(got), err, len(data))
	}
	st, err := e.client.StatObject(ctx, bucket, "dir/obj.png", minio.StatObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st.ETag != up.ETag || st.Size != int64(len(data)) {
		t.Errorf("stat: etag %q size %d; put etag %q size %d", st.ETag, st.Size, up.ETag, len(data))
	}
	want := map[string]string{
		"Content-Type": "image/png", "Content-Disposition": opts.ContentDisposition,
		"Content-Encoding": "identity", // minio-go sent "aws-chunked,identity"
		"Content-Language": "fr", "Cache-Control": "max-age=60",
		"X-Amz-Meta-Epoch": "7", "X-Amz-Meta-Dataset-Name": "imagenet",
	}
	for k, v := range want {
		if got := st.Metadata.Get(k); got != v {
			t.Errorf("header %s = %q, want %q", k, got, v)
		}
	}
	if time.Since(st.LastModified) > time.Hour || st.LastModified.IsZero() {
		t.Errorf("LastModified %v", st.LastModified)
	}
	_, err = e.client.StatObject(ctx, bucket, "dir/missing", minio.StatObjectOptions{})
	if code := minioCode(err); code != "NoSuchKey" {
		t.Errorf("stat missing: %q (%v)", code, err)
	}
	_, err = e.get(t, bucket, "dir/missing", minio.GetObjectOptions{})
	if code := minioCode(err); code != "NoSuchKey" {
		t.Errorf("get missing: %q (%v)", code, err)
	}
	_, err = e.get(t, uniqueBucket("nobucket"), "k", minio.GetObjectOptions{})
	if code := minioCode(err); code != "NoSuchBucket" {
		t.Errorf("get in missing bucket: %q (%v)", code, err)
	}
	// An empty object.
	e.put(t, bucket, "empty", nil, minio.PutObjectOptions{})
	if got, err := e.get(t, bucket, "empty", minio.GetObjectOptions{}); err != nil || len(got) != 0 {
		t.Errorf("empty object: %q, %v", got, err)
	}
}

func testRanges(t *testing.T, e *env) {
	bucket := e.makeBucket(t, "ranges")
	data := randomBytes(10_000)
	e.put(t, bucket, "r", data, minio.PutObjectOptions{})
	cases := []struct {
		start, end int64
		want       []byte
	}{
		{0, 0, data[:1]}, {10, 19, data[10:20]}, {9_990, 20_000, data[9_990:]},
		{5_000, 0, data[5_000:]}, // "bytes=5000-"
		{0, -300, data[9_700:]},  // suffix
	}
	for _, c := range cases {
		var opts minio.GetObjectOptions
		if err := opts.SetRange(c.start, c.end); err != nil {
			t.Fatal(err)
		}
		got, err := e.get(t, bucket, "r", opts)
		if err != nil || !bytes.Equal(got, c.want) {
			t.Errorf("range %d..%d: %d bytes, %v; want %d", c.start, c.end, len(got), err, len(c.want))
		}
	}
	// Raw: status, Content-Range, and the ignored forms.
	raw := []struct {
		header, contentRange string
		status, n            int
	}{
		{"bytes=0-99", "bytes 0-99/10000", 206, 100},
		{"bytes=-10", "bytes 9990-9999/10000", 206, 10},
		{"bytes=0-1,5-6", "", 200, 10_000}, // multi-range: ignored
		{"bytes=9-2", "", 200, 10_000},     // reversed: ignored
		{"items=0-5", "", 200, 10_000},     // other unit: ignored
		{"bytes=10000-", "bytes */10000", 416, -1},
		{"bytes=-0", "bytes */10000", 416, -1},
	}
	for _, c := range raw {
		for _, method := range []string{http.MethodGet, http.MethodHead} {
			resp, body := e.do(t, rawRequest{method: method, path: "/" + bucket + "/r",
				header: http.Header{"Range": {c.header}}})
			if resp.StatusCode != c.status || resp.Header.Get("Content-Range") != c.contentRange {
				t.Errorf("%s Range %q: %d %q, want %d %q", method, c.header, resp.StatusCode,
					resp.Header.Get("Content-Range"), c.status, c.contentRange)
			}
			if c.status != 416 && resp.Header.Get("Accept-Ranges") != "bytes" {
				t.Errorf("%s Range %q: Accept-Ranges %q", method, c.header, resp.Header.Get("Accept-Ranges"))
			}
			if c.status == 416 && method == http.MethodGet && errorCode(t, body) != "InvalidRange" {
				t.Errorf("Range %q: body %q, want InvalidRange", c.header, body)
			}
			if c.n >= 0 && method == http.MethodGet && len(body) != c.n {
				t.Errorf("Range %q: %d bytes, want %d", c.header, len(body), c.n)
			}
			if c.n >= 0 && method == http.MethodHead && resp.ContentLength != int64(c.n) {
				t.Errorf("HEAD Range %q: Content-Length %d, want %d", c.header, resp.ContentLength, c.n)
			}
		}
	}
}

func testConditionals(t *testing.T, e *env) {
	bucket := e.makeBucket(t, "cond")
	up := e.put(t, bucket, "c", []byte("conditional body"), minio.PutObjectOptions{})
	etag := `"` + up.ETag + `"`
	st, err := e.client.StatObject(context.Background(), bucket, "c", minio.StatObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	past := st.LastModified.Add(-time.Hour).UTC().Format(http.TimeFormat)
	future := st.LastModified.Add(time.Hour).UTC().Format(http.TimeFormat)
	cases := []struct {
		name   string
		header http.Header
		status int
	}{
		{"if-match true", http.Header{"If-Match": {etag}}, 200},
		{"if-match list", http.Header{"If-Match": {`"nope", ` + etag}}, 200},
		{"if-match star", http.Header{"If-Match": {"*"}}, 200},
		{"if-match false", http.Header{"If-Match": {`"nope"`}}, 412},
		{"if-none-match true", http.Header{"If-None-Match": {`"nope"`}}, 200},
		{"if-none-match false", http.Header{"If-None-Match": {etag}}, 304},
		{"if-modified-since past", http.Header{"If-Modified-Since": {past}}, 200},
		{"if-modified-since future", http.Header{"If-Modified-Since": {future}}, 304},
		{"if-unmodified-since future", http.Header{"If-Unmodified-Since": {future}}, 200},
		{"if-unmodified-since past", http.Header{"If-Unmodified-Since": {past}}, 412},
		{"bad date ignored", http.Header{"If-Modified-Since": {"yesterday"}}, 200},
		// S3 precedence.
		{"if-match true beats if-unmodified-since false",
			http.Header{"If-Match": {etag}, "If-Unmodified-Since": {past}}, 200},
		{"if-none-match false beats if-modified-since true",
			http.Header{"If-None-Match": {etag}, "If-Modified-Since": {past}}, 304},
		{"if-none-match true beats if-modified-since false",
			http.Header{"If-None-Match": {`"nope"`}, "If-Modified-Since": {future}}, 200},
		{"412 before 304", http.Header{"If-Match": {`"nope"`}, "If-None-Match": {etag}}, 412},
	}
	for _, c := range cases {
		for _, method := range []string{http.MethodGet, http.MethodHead} {
			resp, body := e.do(t, rawRequest{method: method, path: "/" + bucket + "/c", header: c.header})
			if resp.StatusCode != c.status {
				t.Errorf("%s %s: status %d, want %d", method, c.name, resp.StatusCode, c.status)
			}
			switch {
			case c.status == 304 && (len(body) != 0 || resp.Header.Get("ETag") != etag):
				t.Errorf("%s %s: 304 with body %q, ETag %q", method, c.name, body, resp.Header.Get("ETag"))
			case c.status == 412 && method == http.MethodGet && errorCode(t, body) != "PreconditionFailed":
				t.Errorf("%s %s: body %q", method, c.name, body)
			case c.status == 200 && method == http.MethodGet && string(body) != "conditional body":
				t.Errorf("%s %s: body %q", method, c.name, body)
			}
		}
	}
	// Through minio-go too.
	var opts minio.GetObjectOptions
	opts.SetMatchETag("nope")
	_, err = e.get(t, bucket, "c", opts)
	if code := minioCode(err); code != "PreconditionFailed" {
		t.Errorf("minio-go SetMatchETag(nope): %q (%v)", code, err)
	}
}

func testOverrides(t *testing.T, e *env) {
	bucket := e.makeBucket(t, "overrides")
	e.put(t, bucket, "o", []byte("hello"), minio.PutObjectOptions{ContentType: "text/plain"})
	params := url.Values{
		"response-content-type":        {"application/json"},
		"response-content-language":    {"de"},
		"response-expires":             {"Thu, 01 Dec 2094 16:00:00 GMT"},
		"response-cache-control":       {"no-cache"},
		"response-content-disposition": {"inline"},
		"response-content-encoding":    {"identity"},
	}
	u, err := e.client.PresignedGetObject(context.Background(), bucket, "o", time.Minute, params)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(u.String())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	want := map[string]string{
		"Content-Type": "application/json", "Content-Language": "de", "Expires": "Thu, 01 Dec 2094 16:00:00 GMT",
		"Cache-Control": "no-cache", "Content-Disposition": "inline", "Content-Encoding": "identity",
	}
	for k, v := range want {
		if got := resp.Header.Get(k); got != v {
			t.Errorf("override %s = %q, want %q", k, got, v)
		}
	}
	// A value that would split the header block is refused.
	r2, body := e.do(t, rawRequest{method: http.MethodGet, path: "/" + bucket + "/o",
		query: "response-content-type=a%0D%0AX-Evil:%201"})
	expectError(t, r2, body, http.StatusBadRequest, "InvalidArgument")
}

func testCopy(t *testing.T, e *env) {
	ctx := context.Background()
	bucket := e.makeBucket(t, "copy")
	other := e.makeBucket(t, "copy-dst")
	data := randomBytes(3000)
	e.put(t, bucket, "src key+1", data, minio.PutObjectOptions{ContentType: "text/csv",
		UserMetadata: map[string]string{"origin": "yes"}})
	// COPY keeps the metadata.
	info, err := e.client.CopyObject(ctx, minio.CopyDestOptions{Bucket: other, Object: "dst/копия"},
		minio.CopySrcOptions{Bucket: bucket, Object: "src key+1"})
	if err != nil {
		t.Fatalf("CopyObject: %v", err)
	}
	st, err := e.client.StatObject(ctx, other, "dst/копия", minio.StatObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st.ContentType != "text/csv" || st.Metadata.Get("X-Amz-Meta-Origin") != "yes" || st.ETag != info.ETag {
		t.Errorf("copy kept type %q meta %q etag %q/%q", st.ContentType, st.Metadata.Get("X-Amz-Meta-Origin"), st.ETag, info.ETag)
	}
	if got, err := e.get(t, other, "dst/копия", minio.GetObjectOptions{}); err != nil || !bytes.Equal(got, data) {
		t.Errorf("copied bytes differ: %v", err)
	}
	// REPLACE on itself changes the metadata.
	_, err = e.client.CopyObject(ctx, minio.CopyDestOptions{Bucket: bucket, Object: "src key+1", ReplaceMetadata: true,
		UserMetadata: map[string]string{"new": "1"}, ContentType: "text/plain"},
		minio.CopySrcOptions{Bucket: bucket, Object: "src key+1"})
	if err != nil {
		t.Fatalf("self copy with REPLACE: %v", err)
	}
	st, err = e.client.StatObject(ctx, bucket, "src key+1", minio.StatObjectOptions{})
	if err != nil || st.ContentType != "text/plain" || st.Metadata.Get("X-Amz-Meta-New") != "1" || st.Metadata.Get("X-Amz-Meta-Origin") != "" {
		t.Errorf("after REPLACE: type %q meta %v, %v", st.ContentType, st.Metadata, err)
	}
	testCopyRaw(t, e, bucket, other)
}

// testCopyRaw covers what minio-go does not send: self copy without
// REPLACE, bad sources, a missing source, versionId, copy conditions.
func testCopyRaw(t *testing.T, e *env, bucket, other string) {
	src := "/" + bucket + "/" + escapeKey("src key+1")
	cases := []struct {
		source, directive string
		status            int
		code              string
	}{
		{src, "", 400, "InvalidRequest"},
		{src, "COPY", 400, "InvalidRequest"},
		{src, "MOVE", 400, "InvalidArgument"},
		{"nobucketslash", "", 400, "InvalidArgument"},
		{"/" + bucket + "/..%2Fescape", "", 400, "InvalidArgument"},
		{"/" + bucket + "/missing", "", 404, "NoSuchKey"},
	}
	for _, c := range cases {
		h := http.Header{"X-Amz-Copy-Source": {c.source}}
		if c.directive != "" {
			h.Set("X-Amz-Metadata-Directive", c.directive)
		}
		resp, body := e.do(t, rawRequest{method: http.MethodPut, path: "/" + bucket + "/" + escapeKey("src key+1"), header: h})
		expectError(t, resp, body, c.status, c.code)
	}
	resp, body := e.do(t, rawRequest{method: http.MethodPut, path: "/" + other + "/v",
		header: http.Header{"X-Amz-Copy-Source": {strings.TrimPrefix(src, "/") + "?versionId=null"}}})
	if resp.StatusCode != 200 || !strings.Contains(string(body), "<CopyObjectResult") {
		t.Errorf("copy with versionId: %d %q", resp.StatusCode, body)
	}
	// Copy conditions fail with 412.
	resp, body = e.do(t, rawRequest{method: http.MethodPut, path: "/" + other + "/w",
		header: http.Header{"X-Amz-Copy-Source": {src}, "X-Amz-Copy-Source-If-Match": {`"nope"`}}})
	expectError(t, resp, body, 412, "PreconditionFailed")
}

func testDelete(t *testing.T, e *env) {
	ctx := context.Background()
	bucket := e.makeBucket(t, "delete")
	e.put(t, bucket, "gone", []byte("x"), minio.PutObjectOptions{})
	for range 2 { // the second time the key is missing: still 204
		resp, body := e.do(t, rawRequest{method: http.MethodDelete, path: "/" + bucket + "/gone"})
		if resp.StatusCode != http.StatusNoContent {
			t.Errorf("DELETE: %d %q", resp.StatusCode, body)
		}
	}
	if _, err := e.client.StatObject(ctx, bucket, "gone", minio.StatObjectOptions{}); minioCode(err) != "NoSuchKey" {
		t.Errorf("deleted object still there: %v", err)
	}
	// DeleteObjects through minio-go, with a missing key among them.
	var keys []string
	for i := range 30 {
		k := "multi/" + strings.Repeat("k", i%5+1) + string(rune('a'+i%26)) + "-" + string(rune('0'+i%10))
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
			e.put(t, bucket, k, []byte(k), minio.PutObjectOptions{})
		}
	}
	objs := make(chan minio.ObjectInfo, len(keys)+1)
	for _, k := range keys {
		objs <- minio.ObjectInfo{Key: k}
	}
	objs <- minio.ObjectInfo{Key: "multi/never-existed"}
	close(objs)
	for res := range e.client.RemoveObjects(ctx, bucket, objs, minio.RemoveObjectsOptions{}) {
		t.Errorf("RemoveObjects: %s: %v", res.ObjectName, res.Err)
	}
	for obj := range e.client.ListObjects(ctx, bucket, minio.ListObjectsOptions{Prefix: "multi/", Recursive: true}) {
		t.Errorf("left after RemoveObjects: %q %v", obj.Key, obj.Err)
	}
}

// testOddKeys round-trips keys S3 allows and paths mangle.
func testOddKeys(t *testing.T, e *env) {
	bucket := e.makeBucket(t, "oddkeys")
	keys := []string{
		"with space", "plus+sign", "percent%25literal", "question?mark", "hash#tag",
		"unicode/日本語/ключ", "amp&eq=", "semi;colon", "quote'\"", "tilde~star*",
		"x/deep/nested/path/file.txt", "trailing.dot.", "brackets[1](2){3}",
	}
	for _, k := range keys {
		data := []byte("data of " + k)
		e.put(t, bucket, k, data, minio.PutObjectOptions{})
		got, err := e.get(t, bucket, k, minio.GetObjectOptions{})
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("key %q: %q, %v", k, got, err)
		}
	}
	var listed []string
	for obj := range e.client.ListObjects(context.Background(), bucket, minio.ListObjectsOptions{Recursive: true}) {
		if obj.Err != nil {
			t.Fatal(obj.Err)
		}
		listed = append(listed, obj.Key)
	}
	want := slices.Clone(keys)
	slices.Sort(want)
	if !slices.Equal(listed, want) {
		t.Errorf("listed %q\nwant %q", listed, want)
	}
}

// testLargeObject puts (streaming signature) and gets an object larger
// than the small-body limit, so the response is streamed.
func testLargeObject(t *testing.T, e *env) {
	bucket := e.makeBucket(t, "large")
	data := randomBytes(9<<20 + 123)
	e.put(t, bucket, "big", data, minio.PutObjectOptions{DisableMultipart: true})
	got, err := e.get(t, bucket, "big", minio.GetObjectOptions{})
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("big object: %d bytes, %v", len(got), err)
	}
	var opts minio.GetObjectOptions
	opts.SetRange(1<<20, 5<<20-1)
	got, err = e.get(t, bucket, "big", opts)
	if err != nil || !bytes.Equal(got, data[1<<20:5<<20]) {
		t.Fatalf("big range: %d bytes, %v", len(got), err)
	}
}
