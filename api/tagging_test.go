// Tagging through a real client (minio-go) against both origins: tags set
// with PUT, multipart and copy (with the tagging directive), replaced and
// removed on their own, counted on GET/HEAD, kept at the origin; bucket
// tags; S3's limits and errors; the grants tagging needs; versioning
// status and ListObjectVersions.
package api

import (
	"bytes"
	"context"
	"encoding/xml"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/tags"
)

func objectTags(t *testing.T, c *minio.Client, bucket, key string) map[string]string {
	t.Helper()
	tg, err := c.GetObjectTagging(context.Background(), bucket, key, minio.GetObjectTaggingOptions{})
	if err != nil {
		t.Fatalf("GetObjectTagging %s: %v", key, err)
	}
	return tg.ToMap()
}

func tagCount(t *testing.T, c *minio.Client, bucket, key string) int {
	t.Helper()
	st, err := c.StatObject(context.Background(), bucket, key, minio.StatObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return st.UserTagCount
}

func TestObjectTagging(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			e := newEnv(t, b)
			c, ctx := e.client, context.Background()
			bucket := e.makeBucket(t, "tags")
			put := map[string]string{"project": "granary", "stage": "raw data"}
			e.put(t, bucket, "obj", []byte("tagged"), minio.PutObjectOptions{UserTags: put})
			if got := objectTags(t, c, bucket, "obj"); !maps.Equal(got, put) {
				t.Fatalf("tags after PUT: %v", got)
			}
			if n := tagCount(t, c, bucket, "obj"); n != 2 {
				t.Fatalf("x-amz-tagging-count after PUT: %d", n)
			}
			next, _ := tags.NewTags(map[string]string{"only": "one"}, true)
			if err := c.PutObjectTagging(ctx, bucket, "obj", next, minio.PutObjectTaggingOptions{}); err != nil {
				t.Fatal(err)
			}
			if n := tagCount(t, c, bucket, "obj"); n != 1 {
				t.Fatalf("x-amz-tagging-count after PutObjectTagging: %d (cached metadata kept?)", n)
			}
			// Copy: COPY keeps the source's tags, REPLACE takes the request's.
			src := minio.CopySrcOptions{Bucket: bucket, Object: "obj"}
			if _, err := c.CopyObject(ctx, minio.CopyDestOptions{Bucket: bucket, Object: "kept"}, src); err != nil {
				t.Fatal(err)
			}
			if got := objectTags(t, c, bucket, "kept"); !maps.Equal(got, next.ToMap()) {
				t.Fatalf("tags after a COPY copy: %v", got)
			}
			repl := map[string]string{"copied": "yes"}
			dst := minio.CopyDestOptions{Bucket: bucket, Object: "replaced", ReplaceTags: true, UserTags: repl}
			if _, err := c.CopyObject(ctx, dst, src); err != nil {
				t.Fatal(err)
			}
			if got := objectTags(t, c, bucket, "replaced"); !maps.Equal(got, repl) {
				t.Fatalf("tags after a REPLACE copy: %v", got)
			}
			// Multipart: tags given at creation land on the object.
			big := randomBytes(6 << 20)
			mp := map[string]string{"kind": "checkpoint"}
			if _, err := c.PutObject(ctx, bucket, "mp", bytes.NewReader(big), int64(len(big)),
				minio.PutObjectOptions{UserTags: mp, PartSize: 5 << 20}); err != nil {
				t.Fatal(err)
			}
			if got := objectTags(t, c, bucket, "mp"); !maps.Equal(got, mp) {
				t.Fatalf("tags after multipart: %v", got)
			}
			if err := c.RemoveObjectTagging(ctx, bucket, "obj", minio.RemoveObjectTaggingOptions{}); err != nil {
				t.Fatal(err)
			}
			if got := objectTags(t, c, bucket, "obj"); len(got) != 0 {
				t.Fatalf("tags after DeleteObjectTagging: %v", got)
			}
			if n := tagCount(t, c, bucket, "obj"); n != 0 {
				t.Fatalf("x-amz-tagging-count after DeleteObjectTagging: %d", n)
			}
			if got, _ := e.get(t, bucket, "obj", minio.GetObjectOptions{}); string(got) != "tagged" {
				t.Fatalf("tagging changed the bytes: %q", got)
			}
			_, err := c.GetObjectTagging(ctx, bucket, "absent", minio.GetObjectTaggingOptions{})
			if minioCode(err) != "NoSuchKey" {
				t.Fatalf("tags of a missing key: %v", err)
			}
		})
	}
}

func TestBucketTagging(t *testing.T) {
	e := newEnv(t, backends[1])
	c, ctx := e.client, context.Background()
	bucket := e.makeBucket(t, "btags")
	if _, err := c.GetBucketTagging(ctx, bucket); minioCode(err) != "NoSuchTagSet" {
		t.Fatalf("untagged bucket: %v, want NoSuchTagSet", err)
	}
	want := map[string]string{"team": "ml", "cost-center": "42"}
	tg, _ := tags.NewTags(want, false)
	if err := c.SetBucketTagging(ctx, bucket, tg); err != nil {
		t.Fatal(err)
	}
	got, err := c.GetBucketTagging(ctx, bucket)
	if err != nil || !maps.Equal(got.ToMap(), want) {
		t.Fatalf("bucket tags: %v, %v", got, err)
	}
	if err := c.RemoveBucketTagging(ctx, bucket); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetBucketTagging(ctx, bucket); minioCode(err) != "NoSuchTagSet" {
		t.Fatalf("after DeleteBucketTagging: %v", err)
	}
}

// taggingDoc renders a Tagging document of key=value pairs.
func taggingDoc(pairs ...string) []byte {
	var b strings.Builder
	b.WriteString(`<Tagging xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><TagSet>`)
	for i := 0; i+1 < len(pairs); i += 2 {
		b.WriteString("<Tag><Key>")
		xml.EscapeText(&b, []byte(pairs[i]))
		b.WriteString("</Key><Value>")
		xml.EscapeText(&b, []byte(pairs[i+1]))
		b.WriteString("</Value></Tag>")
	}
	b.WriteString("</TagSet></Tagging>")
	return []byte(b.String())
}

func TestTaggingErrors(t *testing.T) {
	e := newEnv(t, backends[0])
	bucket := e.makeBucket(t, "tagerr")
	e.put(t, bucket, "obj", []byte("x"), minio.PutObjectOptions{})
	many := make([]string, 0, 22)
	for i := range 11 {
		many = append(many, "k"+strconv.Itoa(i), "v")
	}
	cases := []struct {
		name string
		rr   rawRequest
		code string
	}{
		{"11 tags", rawRequest{method: "PUT", path: "/" + bucket + "/obj", query: "tagging", body: taggingDoc(many...)}, "InvalidTag"},
		{"long key", rawRequest{method: "PUT", path: "/" + bucket + "/obj", query: "tagging", body: taggingDoc(strings.Repeat("k", 129), "v")}, "InvalidTag"},
		{"long value", rawRequest{method: "PUT", path: "/" + bucket + "/obj", query: "tagging", body: taggingDoc("k", strings.Repeat("v", 257))}, "InvalidTag"},
		{"duplicate key", rawRequest{method: "PUT", path: "/" + bucket + "/obj", query: "tagging", body: taggingDoc("k", "1", "k", "2")}, "InvalidTag"},
		{"aws: prefix", rawRequest{method: "PUT", path: "/" + bucket + "/obj", query: "tagging", body: taggingDoc("aws:x", "1")}, "InvalidTag"},
		{"not XML", rawRequest{method: "PUT", path: "/" + bucket + "/obj", query: "tagging", body: []byte("tags")}, "MalformedXML"},
		{"missing key", rawRequest{method: "PUT", path: "/" + bucket + "/absent", query: "tagging", body: taggingDoc("k", "v")}, "NoSuchKey"},
		{"header duplicate", rawRequest{method: "PUT", path: "/" + bucket + "/h", body: []byte("x"),
			header: http.Header{"X-Amz-Tagging": {"a=1&a=2"}}}, "InvalidArgument"},
		{"header 11 tags", rawRequest{method: "PUT", path: "/" + bucket + "/h", body: []byte("x"),
			header: http.Header{"X-Amz-Tagging": {strings.Repeat("a=1&", 10) + "b=1&c=1&d=1&e=1&f=1&g=1&h=1&i=1&j=1&k=1&l=1"}}}, "InvalidArgument"},
		{"header long value", rawRequest{method: "PUT", path: "/" + bucket + "/h", body: []byte("x"),
			header: http.Header{"X-Amz-Tagging": {"a=" + strings.Repeat("v", 257)}}}, "InvalidTag"},
		{"bad directive", rawRequest{method: "PUT", path: "/" + bucket + "/c", header: http.Header{
			"X-Amz-Copy-Source": {"/" + bucket + "/obj"}, "X-Amz-Tagging-Directive": {"MERGE"}}}, "InvalidArgument"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, body := e.do(t, c.rr)
			if got := errorCode(t, body); got != c.code {
				t.Fatalf("%d %s, want %s: %s", resp.StatusCode, got, c.code, body)
			}
		})
	}
	if n := tagCount(t, e.client, bucket, "obj"); n != 0 {
		t.Fatalf("a refused tagging left %d tags", n)
	}
	if _, err := e.get(t, bucket, "h", minio.GetObjectOptions{}); minioCode(err) != "NoSuchKey" {
		t.Fatalf("a PUT with bad tags stored an object: %v", err)
	}
	// A document of 10 tags at the limits is taken.
	ten := make([]string, 0, 20)
	for i := range 10 {
		ten = append(ten, strings.Repeat("k", 127)+strconv.Itoa(i), strings.Repeat("v", 256))
	}
	resp, body := e.do(t, rawRequest{method: "PUT", path: "/" + bucket + "/obj", query: "tagging", body: taggingDoc(ten...)})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("10 tags at the limits: %d %s", resp.StatusCode, body)
	}
}

// A key may read the tags of what it may read and change the tags of what
// it may write, and nothing else.
func TestTaggingPolicy(t *testing.T) {
	e, _, c, data, ckpt := scopedEnv(t)
	ctx := context.Background()
	tg, _ := tags.NewTags(map[string]string{"k": "v"}, true)
	e.put(t, data, "train/a", []byte("a"), minio.PutObjectOptions{UserTags: map[string]string{"k": "v"}})
	e.put(t, data, "secret/a", []byte("s"), minio.PutObjectOptions{})
	e.put(t, ckpt, "job1/w", []byte("w"), minio.PutObjectOptions{})

	if got := objectTags(t, c, data, "train/a"); got["k"] != "v" {
		t.Fatalf("granted read of tags: %v", got)
	}
	if _, err := c.GetObjectTagging(ctx, data, "secret/a", minio.GetObjectTaggingOptions{}); !denied(err) {
		t.Fatalf("tags outside the read grant: %v", err)
	}
	if err := c.PutObjectTagging(ctx, data, "train/a", tg, minio.PutObjectTaggingOptions{}); !denied(err) {
		t.Fatalf("tagging without a write grant: %v", err)
	}
	if err := c.RemoveObjectTagging(ctx, data, "train/a", minio.RemoveObjectTaggingOptions{}); !denied(err) {
		t.Fatalf("removing tags without a write grant: %v", err)
	}
	if got := objectTags(t, e.client, data, "train/a"); got["k"] != "v" {
		t.Fatalf("a refused call changed the tags: %v", got)
	}
	if err := c.PutObjectTagging(ctx, ckpt, "job1/w", tg, minio.PutObjectTaggingOptions{}); err != nil {
		t.Fatalf("granted tagging: %v", err)
	}
	btg, _ := tags.NewTags(map[string]string{"k": "v"}, false)
	if err := c.SetBucketTagging(ctx, ckpt, btg); !denied(err) {
		t.Fatalf("bucket tagging with a prefix grant: %v", err)
	}
}

func TestVersioningStatus(t *testing.T) {
	e := newEnv(t, backends[0])
	c, ctx := e.client, context.Background()
	bucket := e.makeBucket(t, "vers")
	cfg, err := c.GetBucketVersioning(ctx, bucket)
	if err != nil || cfg.Status != "" {
		t.Fatalf("GetBucketVersioning: %+v, %v", cfg, err)
	}
	for _, status := range []string{"Enabled", "Suspended"} {
		err := c.SetBucketVersioning(ctx, bucket, minio.BucketVersioningConfiguration{Status: status})
		if minioCode(err) != "NotImplemented" || !strings.Contains(err.Error(), "version") {
			t.Fatalf("PutBucketVersioning %s: %v", status, err)
		}
	}
	for _, k := range []string{"a", "b/1", "b/2", "c"} {
		e.put(t, bucket, k, []byte(k), minio.PutObjectOptions{})
	}
	// Two by two, with the markers of each page.
	var keys []string
	marker, vmarker := "", ""
	for pages := 0; ; pages++ {
		q := url.Values{"versions": {""}, "max-keys": {"2"}}
		if marker != "" {
			q.Set("key-marker", marker)
			q.Set("version-id-marker", vmarker)
		}
		resp, body := e.do(t, rawRequest{method: "GET", path: "/" + bucket, query: q.Encode()})
		var out listVersionsResult
		if resp.StatusCode != http.StatusOK || xml.Unmarshal(body, &out) != nil {
			t.Fatalf("ListObjectVersions: %d %s", resp.StatusCode, body)
		}
		for _, v := range out.Versions {
			if v.VersionID != "null" || !v.IsLatest {
				t.Fatalf("version %+v, want id null, latest", v)
			}
			keys = append(keys, v.Key)
		}
		if !out.IsTruncated {
			break
		}
		if out.NextVersionIDMarker != "null" || out.NextKeyMarker == "" || pages > 4 {
			t.Fatalf("truncated page without markers: %s", body)
		}
		marker, vmarker = out.NextKeyMarker, out.NextVersionIDMarker
	}
	if strings.Join(keys, ",") != "a,b/1,b/2,c" {
		t.Fatalf("listed versions %v", keys)
	}
	resp, body := e.do(t, rawRequest{method: "GET", path: "/" + bucket, query: "versions&version-id-marker=null"})
	expectError(t, resp, body, http.StatusBadRequest, "InvalidArgument")
}
