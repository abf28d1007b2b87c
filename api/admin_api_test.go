// The signed admin API: flush streams progress lines and a final verdict,
// refuses unsigned calls, and stops the flush when the client goes away.
package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/granary-dev/granary/gateway"
	"github.com/granary-dev/granary/store"
)

// flushingOrigin fakes a write-back log's Flush: three progress steps,
// then success, except under prefix "fail/" (an error) and "hang/"
// (waits for its context, and reports that it ended on stopped).
type flushingOrigin struct {
	pendingOrigin
	stopped chan error
}

func (f flushingOrigin) Flush(ctx context.Context, bucket, prefix string, progress func(store.FlushStatus)) error {
	if prefix == "hang/" {
		progress(store.FlushStatus{Pending: 1})
		<-ctx.Done()
		f.stopped <- ctx.Err()
		return ctx.Err()
	}
	for i := 3; i > 0; i-- {
		progress(store.FlushStatus{Pending: i, PendingBytes: int64(i) << 20, Uploaded: 3 - i})
	}
	if prefix == "fail/" {
		return errors.New("upload of fail/x failed: access denied by the origin")
	}
	return nil
}

func TestAdminFlush(t *testing.T) {
	base, root := openS3(t)
	fo := flushingOrigin{pendingOrigin: pendingOrigin{Origin: base}, stopped: make(chan error, 1)}
	e := newEnvOver(t, gateway.Options{Origin: fo, Staging: fo}, root, nil)
	bucket := e.makeBucket(t, "flush")

	lines := func(query string) []FlushLine {
		resp, body := e.do(t, rawRequest{method: http.MethodPost, path: "/_granary/flush", query: query})
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-ndjson" {
			t.Fatalf("flush ?%s: %d %s", query, resp.StatusCode, body)
		}
		var out []FlushLine
		for _, l := range strings.Split(strings.TrimSpace(string(body)), "\n") {
			var fl FlushLine
			if err := json.Unmarshal([]byte(l), &fl); err != nil {
				t.Fatalf("line %q: %v", l, err)
			}
			out = append(out, fl)
		}
		return out
	}
	ok := lines("bucket=" + bucket + "&prefix=ckpt%2F")
	if len(ok) != 4 || ok[0].Pending != 3 || ok[2].Uploaded != 2 || !ok[3].Done || ok[3].Error != "" {
		t.Fatalf("flush lines %+v", ok)
	}
	failed := lines("bucket=" + bucket + "&prefix=fail%2F")
	if last := failed[len(failed)-1]; last.Done || !strings.Contains(last.Error, "access denied") {
		t.Fatalf("failed flush ended with %+v", last)
	}

	for _, c := range []struct {
		rr   rawRequest
		code string
	}{
		{rawRequest{method: http.MethodPost, path: "/_granary/flush", query: "bucket=" + bucket, unsigned: true}, "AccessDenied"},
		{rawRequest{method: http.MethodPost, path: "/_granary/flush", query: "bucket=" + bucket, secret: "wrong"}, "SignatureDoesNotMatch"},
		{rawRequest{method: http.MethodPost, path: "/_granary/flush", query: "bucket=no-such-bucket-x"}, "NoSuchBucket"},
		{rawRequest{method: http.MethodPost, path: "/_granary/flush", query: "bucket=Bad_Name"}, "InvalidBucketName"},
		{rawRequest{method: http.MethodGet, path: "/_granary/flush", query: "bucket=" + bucket}, "InvalidRequest"},
		{rawRequest{method: http.MethodPost, path: "/_granary/nothing"}, "InvalidRequest"},
	} {
		resp, body := e.do(t, c.rr)
		if got := errorCode(t, body); resp.StatusCode < 400 || got != c.code {
			t.Errorf("%s %s?%s: %d %s, want %s", c.rr.method, c.rr.path, c.rr.query, resp.StatusCode, got, c.code)
		}
	}
}

// TestAdminFlushClientGone: a client that hangs up ends the node's flush.
func TestAdminFlushClientGone(t *testing.T) {
	base, root := openS3(t)
	fo := flushingOrigin{pendingOrigin: pendingOrigin{Origin: base}, stopped: make(chan error, 1)}
	e := newEnvOver(t, gateway.Options{Origin: fo, Staging: fo}, root, nil)
	bucket := e.makeBucket(t, "flushgone")
	req := e.buildRequest(t, rawRequest{method: http.MethodPost, path: "/_granary/flush", query: "bucket=" + bucket + "&prefix=hang%2F"})
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.Contains(line, `"pending":1`) {
		t.Fatalf("first line %q, %v: progress must arrive while the flush runs", line, err)
	}
	resp.Body.Close()
	select {
	case err := <-fo.stopped:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("flush ended with %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the flush kept running after its client left")
	}
}
