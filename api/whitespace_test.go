// Keys that are or hold only white space in a segment, which AWS accepts:
// PUT, GET, HEAD, as a copy source and in listings.
package api

import (
	"context"
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
