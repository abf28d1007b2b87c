// Keys that are or hold only white space in a segment, which AWS accepts:
// PUT, GET, HEAD, as a copy source, in listings and uploaded in parts.
package api

import (
	"bytes"
	"context"
	"encoding/xml"
	"net/http"
	"slices"
	"testing"

	"github.com/minio/minio-go/v7"
)

// whitespaceKeys are keys AWS accepts that a naive check refuses.
var whitespaceKeys = []string{" ", "  ", "\t", " a", "a ", "d/ /x", "x/ ", "   /y"}

func TestWhitespaceKeys(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			e := newEnv(t, b)
			ctx := context.Background()
			bucket := e.makeBucket(t, "ws")
			// minio-go refuses white-space-only names itself: raw requests.
			for _, key := range whitespaceKeys {
				path := "/" + bucket + "/" + escapeKey(key)
				resp, body := e.do(t, rawRequest{method: "PUT", path: path, body: []byte(key)})
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("PUT %q: %d %s", key, resp.StatusCode, body)
				}
				resp, body = e.do(t, rawRequest{method: "GET", path: path})
				if resp.StatusCode != http.StatusOK || string(body) != key {
					t.Fatalf("GET %q: %d %q", key, resp.StatusCode, body)
				}
				resp, body = e.do(t, rawRequest{method: "PUT", path: "/" + bucket + "/copy/" + escapeKey(key),
					header: http.Header{"X-Amz-Copy-Source": {path}}})
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("copy from %q: %d %s", key, resp.StatusCode, body)
				}
			}
			var listed []string
			for o := range e.client.ListObjects(ctx, bucket, minio.ListObjectsOptions{Recursive: true}) {
				if o.Err != nil {
					t.Fatal(o.Err)
				}
				listed = append(listed, o.Key)
			}
			for _, key := range whitespaceKeys {
				if !slices.Contains(listed, key) || !slices.Contains(listed, "copy/"+key) {
					t.Fatalf("listing %q misses %q or its copy", listed, key)
				}
			}
		})
	}
}

// Multipart uploads of white-space keys, through raw requests (minio-go
// refuses the names): create, parts, list, complete, read back; abort.
func TestWhitespaceKeyMultipart(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			e := newEnv(t, b)
			bucket := e.makeBucket(t, "wsmp")
			first, second := randomBytes(5<<20), []byte("tail")
			for _, key := range []string{" ", "\t", "d/ /x"} {
				path := "/" + bucket + "/" + escapeKey(key)
				create := func() string {
					t.Helper()
					resp, body := e.do(t, rawRequest{method: "POST", path: path, query: "uploads"})
					var res struct {
						UploadID string `xml:"UploadId"`
					}
					if resp.StatusCode != http.StatusOK || xml.Unmarshal(body, &res) != nil || res.UploadID == "" {
						t.Fatalf("create upload of %q: %d %s", key, resp.StatusCode, body)
					}
					return res.UploadID
				}
				id := create()
				var parts []minio.CompletePart
				for n, data := range [][]byte{first, second} {
					q := partQuery(string(rune('1'+n)), id)
					resp, body := e.do(t, rawRequest{method: "PUT", path: path, query: q, body: data})
					if resp.StatusCode != http.StatusOK {
						t.Fatalf("part %d of %q: %d %s", n+1, key, resp.StatusCode, body)
					}
					parts = append(parts, minio.CompletePart{PartNumber: n + 1, ETag: resp.Header.Get("ETag")})
				}
				resp, body := e.do(t, rawRequest{method: "GET", path: path, query: uploadQuery(id)})
				var listed struct{ Part []struct{ PartNumber int } }
				if resp.StatusCode != http.StatusOK || xml.Unmarshal(body, &listed) != nil || len(listed.Part) != 2 {
					t.Fatalf("list parts of %q: %d %s", key, resp.StatusCode, body)
				}
				resp, body = e.do(t, rawRequest{method: "POST", path: path, query: uploadQuery(id), body: completeBody(parts...)})
				if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte("<ETag>")) {
					t.Fatalf("complete %q: %d %s", key, resp.StatusCode, body)
				}
				resp, body = e.do(t, rawRequest{method: "GET", path: path})
				if resp.StatusCode != http.StatusOK || !bytes.Equal(body, append(append([]byte{}, first...), second...)) {
					t.Fatalf("GET %q after the upload: %d, %d bytes", key, resp.StatusCode, len(body))
				}
				gone := create()
				resp, body = e.do(t, rawRequest{method: "DELETE", path: path, query: uploadQuery(gone)})
				if resp.StatusCode != http.StatusNoContent {
					t.Fatalf("abort an upload of %q: %d %s", key, resp.StatusCode, body)
				}
				resp, body = e.do(t, rawRequest{method: "GET", path: path, query: uploadQuery(gone)})
				expectError(t, resp, body, http.StatusNotFound, "NoSuchUpload")
			}
		})
	}
}
