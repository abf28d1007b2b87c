// Expect: 100-continue through the real server: a PUT declaring more than
// S3 takes is refused EntityTooLarge before any 100 Continue, so the
// client never sends the body; one of a size S3 takes is still told to
// go on.
package api

import (
	"bufio"
	"io"
	"net/http"
	"testing"

	"github.com/minio/minio-go/v7"
)

// expectContinue sends the signed headers of a PUT declaring size bytes
// with Expect: 100-continue and no body, and returns the first answer.
func (e *env) expectContinue(t *testing.T, path, query string, size int64) (*http.Response, []byte) {
	t.Helper()
	conn, head := e.dialPut(t, path, query, size, "Expect: 100-continue\r\n")
	if _, err := conn.Write(head); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
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
