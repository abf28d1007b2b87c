// Multipart uploads met twice: a repeated CompleteMultipartUpload (S3
// answers 200 with the ETag of the first completion; an upload completed
// as another key stays unknown), and a part uploaded twice at once.
package api

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"
)

func TestCompleteTwice(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			e := newEnv(t, b)
			core := minio.Core{Client: e.client}
			ctx := context.Background()
			bucket := e.makeBucket(t, "again")
			id, err := core.NewMultipartUpload(ctx, bucket, "obj", minio.PutObjectOptions{})
			if err != nil {
				t.Fatal(err)
			}
			p, err := core.PutObjectPart(ctx, bucket, "obj", id, 1, bytes.NewReader([]byte("once")), 4, minio.PutObjectPartOptions{})
			if err != nil {
				t.Fatal(err)
			}
			parts := []minio.CompletePart{{PartNumber: 1, ETag: p.ETag}}
			first, err := core.CompleteMultipartUpload(ctx, bucket, "obj", id, parts, minio.PutObjectOptions{})
			if err != nil {
				t.Fatal(err)
			}
			again, err := core.CompleteMultipartUpload(ctx, bucket, "obj", id, parts, minio.PutObjectOptions{})
			if err != nil || again.ETag != first.ETag {
				t.Fatalf("second complete: %q, %v; first %q", again.ETag, err, first.ETag)
			}
			_, err = core.CompleteMultipartUpload(ctx, bucket, "other", id, parts, minio.PutObjectOptions{})
			if minioCode(err) != "NoSuchUpload" {
				t.Fatalf("completing the upload as another key: %v", err)
			}
			// Once the object is replaced, the old upload is gone for good.
			e.put(t, bucket, "obj", []byte("replaced"), minio.PutObjectOptions{})
			_, err = core.CompleteMultipartUpload(ctx, bucket, "obj", id, parts, minio.PutObjectOptions{})
			if minioCode(err) != "NoSuchUpload" {
				t.Fatalf("completing after the object was replaced: %v", err)
			}
		})
	}
}

// gatedReader yields first, closes sent, waits for open to close, then
// yields rest.
type gatedReader struct {
	first, rest *bytes.Reader
	sent, open  chan struct{}
}

func (g *gatedReader) Read(p []byte) (int, error) {
	if g.first.Len() > 0 {
		return g.first.Read(p)
	}
	if g.sent != nil {
		close(g.sent)
		g.sent = nil
	}
	<-g.open
	return g.rest.Read(p)
}

// Part 1 uploaded twice at once: the upload that finished last is the
// part, whichever started first, and completing with its ETag gives its
// bytes (from the origin and from the cache).
func TestPartReuploadRace(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			e := newEnv(t, b)
			core := minio.Core{Client: e.client}
			ctx := context.Background()
			bucket := e.makeBucket(t, "race")
			id, err := core.NewMultipartUpload(ctx, bucket, "obj", minio.PutObjectOptions{})
			if err != nil {
				t.Fatal(err)
			}
			slow := bytes.Repeat([]byte("s"), 300_000)
			req := e.buildRequest(t, rawRequest{method: "PUT", path: "/" + bucket + "/obj",
				query: "partNumber=1&uploadId=" + url.QueryEscape(id), body: slow})
			sent := make(chan struct{})
			gate := &gatedReader{first: bytes.NewReader(slow[:100_000]), rest: bytes.NewReader(slow[100_000:]),
				sent: sent, open: make(chan struct{})}
			req.Body = io.NopCloser(gate)
			type result struct {
				resp *http.Response
				err  error
			}
			done := make(chan result, 1)
			go func() {
				resp, err := http.DefaultTransport.RoundTrip(req)
				done <- result{resp, err}
			}()
			select { // the slow upload is under way, or failed
			case <-sent:
			case res := <-done:
				t.Fatalf("slow part ended before its body was sent: %v %v", res.resp, res.err)
			}
			fast, err := core.PutObjectPart(ctx, bucket, "obj", id, 1, bytes.NewReader([]byte("fast")), 4, minio.PutObjectPartOptions{})
			if err != nil {
				t.Fatal(err)
			}
			close(gate.open)
			res := <-done
			if res.err != nil || res.resp.StatusCode != http.StatusOK {
				t.Fatalf("slow part: %v %v", res.resp, res.err)
			}
			res.resp.Body.Close()
			etag := strings.Trim(res.resp.Header.Get("ETag"), `"`)
			if etag == strings.Trim(fast.ETag, `"`) {
				t.Fatal("both uploads got one ETag")
			}
			parts := []minio.CompletePart{{PartNumber: 1, ETag: etag}}
			if _, err := core.CompleteMultipartUpload(ctx, bucket, "obj", id, parts, minio.PutObjectOptions{}); err != nil {
				t.Fatalf("complete with the last-finished part: %v", err)
			}
			for range 2 {
				got, err := e.get(t, bucket, "obj", minio.GetObjectOptions{})
				if err != nil || !bytes.Equal(got, slow) {
					t.Fatalf("object: %d bytes, %v; want the slow part", len(got), err)
				}
			}
		})
	}
}
