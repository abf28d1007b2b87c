// Multipart failures end to end: part numbers and upload IDs that name
// nothing, completions S3 refuses (each leaving the upload usable),
// malformed completion documents, an aborted upload used again, and a part
// whose body is cut short (no part is left).
package api

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"
)

func testMultipartErrors(t *testing.T, e *env) {
	bucket := e.makeBucket(t, "mperr")
	id := e.newUpload(t, bucket, "k", minio.PutObjectOptions{})
	path := "/" + bucket + "/k"
	for _, n := range []string{"0", "10001", "abc", "-1", "", "1.5", "99999999999999999999"} {
		resp, body := e.do(t, rawRequest{method: http.MethodPut, path: path, query: partQuery(n, id), body: []byte("x")})
		if resp.StatusCode != 400 || errorCode(t, body) != "InvalidArgument" {
			t.Errorf("partNumber %q: %d %q, want 400 InvalidArgument", n, resp.StatusCode, body)
		}
	}
	// An upload ID that names nothing, for each operation on an upload.
	for _, rr := range []rawRequest{
		{method: http.MethodPut, query: partQuery("1", "no-such-upload"), body: []byte("x")},
		{method: http.MethodPut, query: partQuery("1", ""), body: []byte("x")},
		{method: http.MethodGet, query: uploadQuery("no-such-upload")},
		{method: http.MethodPost, query: uploadQuery("no-such-upload"),
			body: completeBody(minio.CompletePart{PartNumber: 1, ETag: md5Hex(nil)})},
	} {
		rr.path = path
		resp, body := e.do(t, rr)
		if resp.StatusCode != 404 || errorCode(t, body) != "NoSuchUpload" {
			t.Errorf("%s ?%s: %d %q, want 404 NoSuchUpload", rr.method, rr.query, resp.StatusCode, body)
		}
	}
	resp, body := e.do(t, rawRequest{method: http.MethodDelete, path: path, query: uploadQuery("no-such-upload")})
	wantAbortGone(t, resp, body)
	// An upload ID is valid for its own key only.
	resp, body = e.do(t, rawRequest{method: http.MethodPut, path: path + "-other", query: partQuery("1", id), body: []byte("x")})
	expectError(t, resp, body, 404, "NoSuchUpload")
	// A body without Content-Length.
	req := e.buildRequest(t, rawRequest{method: http.MethodPut, path: path, query: partQuery("1", id), unsigned: true,
		header: http.Header{"X-Amz-Content-Sha256": {"UNSIGNED-PAYLOAD"}}})
	req.Body, req.ContentLength = io.NopCloser(strings.NewReader("chunked body")), -1
	resp, body = roundTrip(t, signV4(req))
	expectError(t, resp, body, 411, "MissingContentLength")
	// Over S3's part size limit: refused before a byte is read.
	if status := e.cutPart(t, bucket, "k", partQuery("1", id), 5<<30+1, 0); status != 400 {
		t.Errorf("a part of 5 GiB + 1: status %d, want 400 EntityTooLarge", status)
	}
	testPartBodyChecks(t, e, bucket, id)
	testRefusedCompletions(t, e, bucket, id)
}

// testPartBodyChecks sends part bodies that fail the checks a PutObject
// body goes through: none is stored.
func testPartBodyChecks(t *testing.T, e *env, bucket, id string) {
	data := []byte("the part as sent")
	for _, c := range []struct {
		header http.Header
		code   string
	}{
		{http.Header{"X-Amz-Content-Sha256": {sha256Hex([]byte("other bytes"))}}, "XAmzContentSHA256Mismatch"},
		{http.Header{"X-Amz-Content-Sha256": {"UNSIGNED-PAYLOAD"}, "Content-Md5": {"1B2M2Y8AsgTpgAmY7PhCfg=="}}, "BadDigest"},
	} {
		req := e.buildRequest(t, rawRequest{method: http.MethodPut, path: "/" + bucket + "/k", query: partQuery("7", id),
			body: data, unsigned: true, header: c.header})
		resp, body := roundTrip(t, signV4(req))
		expectError(t, resp, body, 400, c.code)
	}
	lp, err := e.core().ListObjectParts(context.Background(), bucket, "k", id, 0, 0)
	if err != nil || len(lp.ObjectParts) != 0 {
		t.Errorf("after failed checks: parts %+v, %v", lp.ObjectParts, err)
	}
}

// testRefusedCompletions sends completions S3 refuses; each leaves the
// upload as it was, and a valid one then succeeds.
func testRefusedCompletions(t *testing.T, e *env, bucket, id string) {
	path := "/" + bucket + "/k"
	first, last := randomBytes(1000), randomBytes(2000)
	p1 := e.putPart(t, bucket, "k", id, 1, first)
	p2 := e.putPart(t, bucket, "k", id, 2, last)
	bad := minio.CompletePart{PartNumber: 1, ETag: md5Hex([]byte("other bytes"))}
	cases := []struct {
		name   string
		parts  []minio.CompletePart
		status int
		code   string
	}{
		{"small first part", []minio.CompletePart{p1, p2}, 400, "EntityTooSmall"},
		{"descending", []minio.CompletePart{p2, p1}, 400, "InvalidPartOrder"},
		{"repeated (s3-tests: InvalidPart)", []minio.CompletePart{p1, p1}, 400, "InvalidPart"},
		{"wrong ETag", []minio.CompletePart{bad}, 400, "InvalidPart"},
		{"not an MD5", []minio.CompletePart{{PartNumber: 1, ETag: "zz"}}, 400, "InvalidPart"},
		{"missing part", []minio.CompletePart{{PartNumber: 3, ETag: p2.ETag}}, 400, "InvalidPart"},
		{"part 0", []minio.CompletePart{{PartNumber: 0, ETag: p1.ETag}}, 400, "InvalidArgument"},
		{"part 10001", []minio.CompletePart{{PartNumber: 10001, ETag: p1.ETag}}, 400, "InvalidArgument"},
	}
	for _, c := range cases {
		resp, body := e.do(t, rawRequest{method: http.MethodPost, path: path, query: uploadQuery(id), body: completeBody(c.parts...)})
		if resp.StatusCode != c.status || errorCode(t, body) != c.code {
			t.Errorf("%s: %d %q, want %d %s", c.name, resp.StatusCode, body, c.status, c.code)
		}
	}
	// The upload survived every refusal: the last part alone completes it.
	resp, body := e.do(t, rawRequest{method: http.MethodPost, path: path, query: uploadQuery(id), body: completeBody(p2)})
	if resp.StatusCode != 200 {
		t.Fatalf("completion after refusals: %d %q", resp.StatusCode, body)
	}
	if got, err := e.get(t, bucket, "k", minio.GetObjectOptions{}); err != nil || !bytes.Equal(got, last) {
		t.Errorf("completed from part 2 only: %d bytes, %v", len(got), err)
	}
}

func testBadComplete(t *testing.T, e *env) {
	bucket := e.makeBucket(t, "mpxml")
	id := e.newUpload(t, bucket, "k", minio.PutObjectOptions{})
	p1 := e.putPart(t, bucket, "k", id, 1, []byte("only part"))
	huge := append([]byte("<CompleteMultipartUpload>"), bytes.Repeat([]byte(" "), 5<<20)...)
	for name, body := range map[string][]byte{
		"empty":        nil,
		"not XML":      []byte("this is not xml"),
		"no parts":     []byte(`<CompleteMultipartUpload xmlns="http://s3.amazonaws.com/doc/2006-03-01/"></CompleteMultipartUpload>`),
		"other root":   []byte(`<Delete><Object><Key>k</Key></Object></Delete>`),
		"bad number":   []byte(`<CompleteMultipartUpload><Part><PartNumber>one</PartNumber><ETag>x</ETag></Part></CompleteMultipartUpload>`),
		"unterminated": completeBody(p1)[:40],
		"too large":    huge,
	} {
		resp, got := e.do(t, rawRequest{method: http.MethodPost, path: "/" + bucket + "/k", query: uploadQuery(id), body: body})
		if resp.StatusCode != 400 || errorCode(t, got) != "MalformedXML" {
			t.Errorf("%s: %d %.200q, want 400 MalformedXML", name, resp.StatusCode, got)
		}
	}
	// The upload is intact; a document without namespace, with checksum
	// elements and unquoted ETags completes it.
	doc := fmt.Sprintf("<CompleteMultipartUpload>\n  <Part>\n    <ETag>%s</ETag>\n    <ChecksumCRC32>AAAAAA==</ChecksumCRC32>\n"+
		"    <PartNumber>1</PartNumber>\n  </Part>\n</CompleteMultipartUpload>", p1.ETag)
	resp, got := e.do(t, rawRequest{method: http.MethodPost, path: "/" + bucket + "/k", query: uploadQuery(id), body: []byte(doc)})
	if resp.StatusCode != 200 {
		t.Fatalf("plain completion: %d %q", resp.StatusCode, got)
	}
}

func testAbortedUpload(t *testing.T, e *env) {
	ctx := context.Background()
	core := e.core()
	bucket := e.makeBucket(t, "mpabort")
	id := e.newUpload(t, bucket, "k", minio.PutObjectOptions{})
	p1 := e.putPart(t, bucket, "k", id, 1, randomBytes(100))
	resp, body := e.do(t, rawRequest{method: http.MethodDelete, path: "/" + bucket + "/k", query: uploadQuery(id)})
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("abort: %d %q", resp.StatusCode, body)
	}
	_, err := core.PutObjectPart(ctx, bucket, "k", id, 2, bytes.NewReader([]byte("late")), 4, minio.PutObjectPartOptions{})
	if minioCode(err) != "NoSuchUpload" {
		t.Errorf("part after abort: %v", err)
	}
	if _, err := core.ListObjectParts(ctx, bucket, "k", id, 0, 0); minioCode(err) != "NoSuchUpload" {
		t.Errorf("list parts after abort: %v", err)
	}
	_, err = core.CompleteMultipartUpload(ctx, bucket, "k", id, []minio.CompletePart{p1}, minio.PutObjectOptions{})
	if minioCode(err) != "NoSuchUpload" {
		t.Errorf("complete after abort: %v", err)
	}
	resp, body = e.do(t, rawRequest{method: http.MethodDelete, path: "/" + bucket + "/k", query: uploadQuery(id)})
	wantAbortGone(t, resp, body)
	if uploadListed(t, e, bucket, "k", id) {
		t.Errorf("aborted upload still listed")
	}
	if _, err := e.client.StatObject(ctx, bucket, "k", minio.StatObjectOptions{}); minioCode(err) != "NoSuchKey" {
		t.Errorf("an aborted upload left an object: %v", err)
	}
}

// wantAbortGone checks the answer to an abort of an upload that does not
// exist: S3 answers NoSuchUpload, MinIO (and so Granary over it) success.
func wantAbortGone(t *testing.T, resp *http.Response, body []byte) {
	t.Helper()
	if resp.StatusCode == http.StatusNoContent {
		return
	}
	if resp.StatusCode != 404 || errorCode(t, body) != "NoSuchUpload" {
		t.Errorf("abort of an upload that is gone: %d %q, want 404 NoSuchUpload or 204", resp.StatusCode, body)
	}
}

// testTruncatedPart cuts a part body short: the upload keeps no part of
// that number (or keeps the earlier one).
func testTruncatedPart(t *testing.T, e *env) {
	ctx := context.Background()
	bucket := e.makeBucket(t, "mptrunc")
	id := e.newUpload(t, bucket, "k", minio.PutObjectOptions{})
	query := partQuery("1", id)
	if status := e.cutPart(t, bucket, "k", query, 6<<20, 1<<20); status != 0 && status < 400 {
		t.Fatalf("truncated part answered %d", status)
	}
	lp, err := e.core().ListObjectParts(ctx, bucket, "k", id, 0, 0)
	if err != nil || len(lp.ObjectParts) != 0 {
		t.Fatalf("after a truncated part: %+v, %v", lp.ObjectParts, err)
	}
	// A truncated replacement leaves the earlier part as it was.
	data := randomBytes(3000)
	e.putPart(t, bucket, "k", id, 1, data)
	if status := e.cutPart(t, bucket, "k", query, 5000, 4000); status != 0 && status < 400 {
		t.Fatalf("truncated replacement answered %d", status)
	}
	lp, err = e.core().ListObjectParts(ctx, bucket, "k", id, 0, 0)
	if err != nil || len(lp.ObjectParts) != 1 || lp.ObjectParts[0].Size != 3000 || strings.Trim(lp.ObjectParts[0].ETag, `"`) != md5Hex(data) {
		t.Fatalf("after a truncated replacement: %+v, %v", lp.ObjectParts, err)
	}
}

// cutPart sends a signed UNSIGNED-PAYLOAD part upload declaring size
// bytes, writes send of them, closes its write side and waits for the
// answer (so the server is done with the request): its status, or 0 if
// the server closed the connection without one.
func (e *env) cutPart(t *testing.T, bucket, key, query string, size, send int64) int {
	t.Helper()
	conn, head := e.dialPut(t, "/"+bucket+"/"+key, query, size, "")
	defer conn.Close()
	if _, err := conn.Write(append(head, make([]byte, send)...)); err != nil {
		t.Fatal(err)
	}
	conn.(*net.TCPConn).CloseWrite()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		// No answer: wait for the close, which comes after the handler.
		io.Copy(io.Discard, conn)
		return 0
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}
