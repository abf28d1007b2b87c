// Anonymous reads of a public-read bucket: unsigned GET and HEAD of its
// objects are served; every other unsigned request, and any request to
// another bucket, still needs a valid signature.
package api

import (
	"bytes"
	"context"
	"net/http"
	"testing"

	"github.com/minio/minio-go/v7"
)

func TestAnonymousRead(t *testing.T) {
	pub := uniqueBucket("pub")
	e := newEnv(t, backends[0], func(o *Options) { o.AnonymousRead = map[string]bool{pub: true} })
	if err := e.client.MakeBucket(context.Background(), pub, minio.MakeBucketOptions{Region: testRegion}); err != nil {
		t.Fatal(err)
	}
	priv := e.makeBucket(t, "priv")
	data := []byte("a training sample")
	e.put(t, pub, "k", data, minio.PutObjectOptions{})
	e.put(t, priv, "k", data, minio.PutObjectOptions{})

	resp, body := e.do(t, rawRequest{method: http.MethodGet, path: "/" + pub + "/k", unsigned: true})
	if resp.StatusCode != http.StatusOK || !bytes.Equal(body, data) {
		t.Fatalf("anonymous GET of a public-read object: %d %q", resp.StatusCode, body)
	}
	resp, _ = e.do(t, rawRequest{method: http.MethodGet, path: "/" + pub + "/k", unsigned: true, header: http.Header{"Range": {"bytes=2-9"}}})
	if resp.StatusCode != http.StatusPartialContent {
		t.Fatalf("anonymous ranged GET: %d", resp.StatusCode)
	}
	cases := []struct {
		name   string
		rr     rawRequest
		status int
		code   string
	}{
		{"head", rawRequest{method: http.MethodHead, path: "/" + pub + "/k", unsigned: true}, 200, ""},
		{"missing key", rawRequest{method: http.MethodGet, path: "/" + pub + "/nope", unsigned: true}, 404, "NoSuchKey"},
		{"put", rawRequest{method: http.MethodPut, path: "/" + pub + "/k", unsigned: true, body: []byte("x")}, 403, "AccessDenied"},
		{"delete", rawRequest{method: http.MethodDelete, path: "/" + pub + "/k", unsigned: true}, 403, "AccessDenied"},
		{"list", rawRequest{method: http.MethodGet, path: "/" + pub, unsigned: true}, 403, "AccessDenied"},
		{"sub-resource", rawRequest{method: http.MethodGet, path: "/" + pub + "/k", query: "tagging", unsigned: true}, 403, "AccessDenied"},
		{"get with a body", rawRequest{method: http.MethodGet, path: "/" + pub + "/k", unsigned: true, body: []byte("x")}, 403, "AccessDenied"},
		{"another bucket", rawRequest{method: http.MethodGet, path: "/" + priv + "/k", unsigned: true}, 403, "AccessDenied"},
		// A signed request is verified even where anonymous reads pass.
		{"wrong secret", rawRequest{method: http.MethodGet, path: "/" + pub + "/k", secret: "not-the-secret"}, 403, "SignatureDoesNotMatch"},
		{"signed", rawRequest{method: http.MethodGet, path: "/" + pub + "/k"}, 200, ""},
	}
	for _, c := range cases {
		resp, body := e.do(t, c.rr)
		code := ""
		if c.code != "" {
			code = errorCode(t, body)
		}
		if resp.StatusCode != c.status || code != c.code {
			t.Errorf("%s: %d %q, want %d %s", c.name, resp.StatusCode, code, c.status, c.code)
		}
	}
	if _, err := e.client.StatObject(context.Background(), pub, "k", minio.StatObjectOptions{}); err != nil {
		t.Fatalf("the object is gone after refused anonymous writes: %v", err)
	}
}
