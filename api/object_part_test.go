// GET and HEAD with partNumber through raw requests, against both origins:
// each part of a multipart object (206, Content-Range, parts count), part
// 1 of an object written whole, and the errors.
package api

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"testing"

	"github.com/minio/minio-go/v7"
)

func TestPartNumber(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			e := newEnv(t, b)
			bucket := e.makeBucket(t, "part")
			first, second := randomBytes(5<<20), randomBytes(1000)
			putParts(t, e, bucket, "mp", first, second)
			e.put(t, bucket, "whole", []byte("hello"), minio.PutObjectOptions{})
			cases := []struct {
				key, n      string
				want        []byte
				off, total  int
				partsHeader string
			}{
				{"mp", "1", first, 0, len(first) + len(second), "2"},
				{"mp", "2", second, len(first), len(first) + len(second), "2"},
				{"whole", "1", []byte("hello"), 0, 5, ""},
			}
			for _, c := range cases {
				for _, method := range []string{"GET", "HEAD"} {
					resp, body := e.do(t, rawRequest{method: method, path: "/" + bucket + "/" + c.key, query: "partNumber=" + c.n})
					wantRange := "bytes " + strconv.Itoa(c.off) + "-" + strconv.Itoa(c.off+len(c.want)-1) + "/" + strconv.Itoa(c.total)
					if resp.StatusCode != http.StatusPartialContent || resp.Header.Get("Content-Range") != wantRange ||
						resp.Header.Get("X-Amz-Mp-Parts-Count") != c.partsHeader ||
						resp.Header.Get("Content-Length") != strconv.Itoa(len(c.want)) {
						t.Fatalf("%s %s part %s: %d, range %q (want %q), parts %q, length %s", method, c.key, c.n,
							resp.StatusCode, resp.Header.Get("Content-Range"), wantRange, resp.Header.Get("X-Amz-Mp-Parts-Count"),
							resp.Header.Get("Content-Length"))
					}
					if method == "GET" && !bytes.Equal(body, c.want) {
						t.Fatalf("GET %s part %s: %d bytes, not the part", c.key, c.n, len(body))
					}
				}
			}
			for _, c := range []struct{ key, n, code string }{
				{"mp", "3", "InvalidPart"}, {"whole", "2", "InvalidPart"},
				{"whole", "0", "InvalidArgument"}, {"whole", "x", "InvalidArgument"},
			} {
				resp, body := e.do(t, rawRequest{method: "GET", path: "/" + bucket + "/" + c.key, query: "partNumber=" + c.n})
				expectError(t, resp, body, http.StatusBadRequest, c.code)
			}
			resp, body := e.do(t, rawRequest{method: "GET", path: "/" + bucket + "/whole", query: "partNumber=1",
				header: http.Header{"Range": {"bytes=0-1"}}})
			expectError(t, resp, body, http.StatusBadRequest, "InvalidRequest")
		})
	}
}

// putParts uploads parts as one multipart object.
func putParts(t *testing.T, e *env, bucket, key string, parts ...[]byte) {
	t.Helper()
	core := minio.Core{Client: e.client}
	ctx := context.Background()
	id, err := core.NewMultipartUpload(ctx, bucket, key, minio.PutObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var done []minio.CompletePart
	for i, p := range parts {
		pi, err := core.PutObjectPart(ctx, bucket, key, id, i+1, bytes.NewReader(p), int64(len(p)), minio.PutObjectPartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		done = append(done, minio.CompletePart{PartNumber: i + 1, ETag: pi.ETag})
	}
	if _, err := core.CompleteMultipartUpload(ctx, bucket, key, id, done, minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
}
