// Anonymous reads of public data: unsigned GET and HEAD of a public-read
// bucket's objects, and GET, HEAD and LIST under a public prefix, are
// served; every other unsigned request still needs a valid signature.
package api

import (
	"bytes"
	"context"
	"net/http"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/granary-dev/granary/access"
)

func TestAnonymousRead(t *testing.T) {
	pub, half := uniqueBucket("pub"), uniqueBucket("half")
	anon := access.NewPolicy([]access.Grant{
		{Bucket: pub, Actions: access.Read},
		{Bucket: half, Prefix: "public/", Actions: access.Read | access.List},
	})
	e := newEnv(t, backends[0], func(o *nodeOptions) { o.Access = access.NewRegistry(testAccess, testSecret, anon) })
	if err := e.client.MakeBucket(context.Background(), half, minio.MakeBucketOptions{Region: testRegion}); err != nil {
		t.Fatal(err)
	}
	e.put(t, half, "public/a", []byte("open"), minio.PutObjectOptions{})
	e.put(t, half, "private/a", []byte("closed"), minio.PutObjectOptions{})
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
		{"public prefix", rawRequest{method: http.MethodGet, path: "/" + half + "/public/a", unsigned: true}, 200, ""},
		{"list the public prefix", rawRequest{method: http.MethodGet, path: "/" + half, query: "list-type=2&prefix=public/", unsigned: true}, 200, ""},
		{"list the bucket", rawRequest{method: http.MethodGet, path: "/" + half, query: "list-type=2", unsigned: true}, 403, "AccessDenied"},
		{"private prefix", rawRequest{method: http.MethodGet, path: "/" + half + "/private/a", unsigned: true}, 403, "AccessDenied"},
		{"list buckets", rawRequest{method: http.MethodGet, path: "/", unsigned: true}, 403, "AccessDenied"},
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
