// Expect: 100-continue through the real server: a PUT declaring more than
// S3 takes is refused EntityTooLarge before any 100 Continue, so the
// client never sends the body; one of a size S3 takes is still told to
// go on.
package api

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
)

// expectContinue sends the signed headers of a PUT declaring size bytes
// with Expect: 100-continue and no body, and returns the first answer.
func (e *env) expectContinue(t *testing.T, path, query string, size int64) (*http.Response, []byte) {
	t.Helper()
	req := e.buildRequest(t, rawRequest{method: http.MethodPut, path: path, query: query,
		unsigned: true, header: http.Header{"X-Amz-Content-Sha256": {"UNSIGNED-PAYLOAD"}}})
	req.ContentLength = size
	req = signV4(req)
	conn, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(time.Minute))
	var head bytes.Buffer
	fmt.Fprintf(&head, "PUT %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\nExpect: 100-continue\r\n", req.URL.RequestURI(), e.addr, size)
	for k, vs := range req.Header {
		for _, v := range vs {
			fmt.Fprintf(&head, "%s: %s\r\n", k, v)
		}
	}
	head.WriteString("\r\n")
	if _, err := conn.Write(head.Bytes()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		t.Fatalf("PUT %s?%s declaring %d bytes: %v", path, query, size, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, body
}

func TestExpectContinueTooLarge(t *testing.T) {
	e := newEnv(t, backends[0])
	bucket := e.makeBucket(t, "expect")
	id := e.newUpload(t, bucket, "mp", minio.PutObjectOptions{})
	for _, c := range []struct {
		what, path, query string
		size              int64
	}{
		{"an object of 6 TiB", "/" + bucket + "/big", "", 6 << 40},
		{"an object of 5 GiB + 1", "/" + bucket + "/big", "", 5<<30 + 1},
		{"a part of 5 GiB + 1", "/" + bucket + "/mp", partQuery("1", id), 5<<30 + 1},
	} {
		resp, body := e.expectContinue(t, c.path, c.query, c.size)
		if resp.StatusCode == http.StatusContinue {
			t.Errorf("%s: told to send it (100 Continue)", c.what)
			continue
		}
		expectError(t, resp, body, http.StatusBadRequest, "EntityTooLarge")
		if !resp.Close {
			t.Errorf("%s: the answer keeps the connection, whose body was never sent", c.what)
		}
	}
	// A size S3 takes is still told to go on.
	if resp, body := e.expectContinue(t, "/"+bucket+"/small", "", 10); resp.StatusCode != http.StatusContinue {
		t.Errorf("a PUT of 10 bytes: %d %q, want 100 Continue", resp.StatusCode, body)
	}
}
