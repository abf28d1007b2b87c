// Tests of the S3 origin's multipart calls beyond the conformance suite:
// error translation, no retry of part bodies, streaming without
// buffering, the info of a completion, and upload listings from a server
// that pages and groups by itself (as S3 does, and MinIO does not).
package s3

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/granary-dev/granary/store"
)

// fakeOrigin returns an origin talking to handler.
func fakeOrigin(t *testing.T, handler http.HandlerFunc) *Origin {
	t.Helper()
	fake := httptest.NewServer(handler)
	t.Cleanup(fake.Close)
	return newOrigin(t, Options{Endpoint: strings.TrimPrefix(fake.URL, "http://"), AccessKey: "k", SecretKey: "secret-key"})
}

// errorHandler answers every request with one S3 error.
func errorHandler(status int, code, message string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(status)
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message></Error>`, code, message)
	}
}

// multipartCalls makes each multipart call once, by name.
func multipartCalls(o *Origin) map[string]func(ctx context.Context) error {
	const id = "some-upload"
	parts := []store.CompletePart{{Number: 1, ETag: "0123456789abcdef0123456789abcdef"}}
	return map[string]func(ctx context.Context) error{
		"NewUpload": func(ctx context.Context) error {
			_, err := o.NewUpload(ctx, "bucket", "key", store.ObjectMeta{})
			return err
		},
		"PutPart": func(ctx context.Context) error {
			_, err := o.PutPart(ctx, "bucket", "key", id, 1, strings.NewReader("data"), 4)
			return err
		},
		"CompleteUpload": func(ctx context.Context) error {
			_, err := o.CompleteUpload(ctx, "bucket", "key", id, parts)
			return err
		},
		"AbortUpload": func(ctx context.Context) error { return o.AbortUpload(ctx, "bucket", "key", id) },
		"ListParts": func(ctx context.Context) error {
			_, err := o.ListParts(ctx, "bucket", "key", id, store.PartListOptions{})
			return err
		},
		"ListUploads": func(ctx context.Context) error {
			_, err := o.ListUploads(ctx, "bucket", store.UploadListOptions{})
			return err
		},
	}
}

func TestMultipartErrorCodes(t *testing.T) {
	partNumberMsg := "Part number must be an integer between 1 and 10000, inclusive"
	for _, c := range []struct {
		status        int
		code, message string
		calls         []string
		want          error
	}{
		{404, "NoSuchUpload", "gone", []string{"PutPart", "CompleteUpload", "AbortUpload", "ListParts"}, store.ErrNoSuchUpload},
		{400, "InvalidPart", "bad part", []string{"CompleteUpload"}, store.ErrInvalidPart},
		{400, "InvalidPartOrder", "order", []string{"CompleteUpload"}, store.ErrInvalidPartOrder},
		{400, "EntityTooSmall", "small", []string{"CompleteUpload"}, store.ErrEntityTooSmall},
		{400, "InvalidArgument", partNumberMsg, []string{"PutPart", "CompleteUpload"}, store.ErrInvalidPartNumber},
		{404, "NoSuchBucket", "no bucket", []string{"NewUpload", "ListUploads", "PutPart"}, store.ErrNoSuchBucket},
		{403, "AccessDenied", "no", []string{"NewUpload", "PutPart", "CompleteUpload", "AbortUpload", "ListParts", "ListUploads"}, store.ErrAccessDenied},
	} {
		t.Run(c.code, func(t *testing.T) {
			calls := multipartCalls(fakeOrigin(t, errorHandler(c.status, c.code, c.message)))
			for _, name := range c.calls {
				if err := calls[name](context.Background()); !errors.Is(err, c.want) {
					t.Errorf("%s answered %s = %v, want %v", name, c.code, err, c.want)
				}
			}
		})
	}
	// Another InvalidArgument is no part number error.
	o := fakeOrigin(t, errorHandler(400, "InvalidArgument", "Unsupported header"))
	_, err := o.PutPart(context.Background(), "bucket", "key", "id", 1, strings.NewReader("x"), 1)
	if err == nil || errors.Is(err, store.ErrInvalidPartNumber) {
		t.Errorf("PutPart answered InvalidArgument about a header = %v, want an error other than ErrInvalidPartNumber", err)
	}
}

// TestPutPartNotRetried checks that a part's body is sent once, even when
// the server asks for a retry (the body may be consumed), while a request
// without a body is retried.
func TestPutPartNotRetried(t *testing.T) {
	o := fakeOrigin(t, errorHandler(503, "SlowDown", "later"))
	ctx := context.Background()
	_, err := o.PutPart(ctx, "bucket", "key", "id", 1, bytes.NewReader(make([]byte, 1000)), 1000)
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("PutPart answered SlowDown = %v, want ErrUnavailable", err)
	}
	if n := o.Requests(); n != 1 {
		t.Fatalf("PutPart sent %d requests, want 1 (no retry of a body)", n)
	}
	if _, err := o.ListParts(ctx, "bucket", "key", "id", store.PartListOptions{}); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("ListParts answered SlowDown = %v, want ErrUnavailable", err)
	}
	if n := o.Requests() - 1; n != defaultAttempts {
		t.Fatalf("ListParts sent %d requests, want %d (retried)", n, defaultAttempts)
	}
}

// patternReader yields n bytes of a repeating pattern, never as a
// seekable or sized reader.
type patternReader struct{ n, off int64 }

func (p *patternReader) Read(b []byte) (int, error) {
	if p.off >= p.n {
		return 0, io.EOF
	}
	b = b[:min(int64(len(b)), p.n-p.off)]
	for i := range b {
		b[i] = byte((p.off + int64(i)) % 251)
	}
	p.off += int64(len(b))
	return len(b), nil
}

// TestPutPartStreams uploads a 32 MiB part and checks that far less than
// that was allocated on the way: the part went out as it was read.
func TestPutPartStreams(t *testing.T) {
	o := newOrigin(t, Options{})
	ctx := context.Background()
	bucket := fmt.Sprintf("stream-%d", time.Now().UnixNano())
	if err := o.MakeBucket(ctx, bucket); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.RemoveBucket(context.Background(), bucket) })
	id, err := o.NewUpload(ctx, bucket, "big", store.ObjectMeta{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.AbortUpload(context.Background(), bucket, "big", id) })
	const size = 32 << 20
	h := md5.New()
	io.Copy(h, &patternReader{n: size})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	p, err := o.PutPart(ctx, bucket, "big", id, 1, &patternReader{n: size}, size)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if p.ETag != hex.EncodeToString(h.Sum(nil)) || p.Size != size {
		t.Fatalf("PutPart = %+v, want size %d and the body's MD5", p, size)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > size/4 {
		t.Fatalf("PutPart of %d bytes allocated %d bytes: the body was buffered", size, alloc)
	}
}

// TestCompleteInfo checks where a completion's info comes from: a HEAD
// conditional on the completed ETag, and, when that HEAD fails, the ETag
// alone with Size -1.
func TestCompleteInfo(t *testing.T) {
	const etag = "0123456789abcdef0123456789abcdef-2"
	for _, headOK := range []bool{true, false} {
		var ifMatch string
		o := fakeOrigin(t, func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			switch r.Method {
			case http.MethodPost:
				fmt.Fprintf(w, `<CompleteMultipartUploadResult><Bucket>bucket</Bucket><Key>key</Key><ETag>"%s"</ETag></CompleteMultipartUploadResult>`, etag)
			case http.MethodHead:
				ifMatch = r.Header.Get("If-Match")
				if !headOK {
					w.WriteHeader(http.StatusNotFound)
					return
				}
				w.Header().Set("ETag", `"`+etag+`"`)
				w.Header().Set("Content-Length", "10485761")
				w.Header().Set("Content-Type", "text/csv")
				w.Header().Set("Last-Modified", time.Now().UTC().Format(http.TimeFormat))
				w.Header().Set("X-Amz-Meta-Run", "r1")
			}
		})
		info, err := o.CompleteUpload(context.Background(), "bucket", "key", "id", []store.CompletePart{
			{Number: 1, ETag: "0123456789abcdef0123456789abcdef"}, {Number: 2, ETag: "0123456789abcdef0123456789abcdef"},
		})
		if err != nil {
			t.Fatalf("CompleteUpload (HEAD answers: %v): %v", headOK, err)
		}
		if strings.Trim(ifMatch, `"`) != etag {
			t.Errorf("HEAD after the completion had If-Match %q, want %s", ifMatch, etag)
		}
		want := store.ObjectInfo{Bucket: "bucket", Key: "key", ETag: etag, Size: -1}
		if headOK {
			want.Size, want.ContentType, want.User = 10485761, "text/csv", map[string]string{"run": "r1"}
		}
		if info.ETag != want.ETag || info.Size != want.Size || info.ContentType != want.ContentType ||
			info.User["run"] != want.User["run"] || info.Bucket != "bucket" || info.Key != "key" {
			t.Errorf("CompleteUpload (HEAD answers: %v) = %+v, want %+v", headOK, info, want)
		}
	}
}

func TestMultipartOriginDown(t *testing.T) {
	o := newOrigin(t, Options{Endpoint: closedPort(t), AccessKey: "k", SecretKey: "secret-key"})
	for name, call := range multipartCalls(o) {
		err := within(t, 15*time.Second, name, func() error { return call(context.Background()) })
		if !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s against a closed port = %v, want ErrUnavailable", name, err)
		}
	}
}

func TestMultipartCallerCancellation(t *testing.T) {
	o := newOrigin(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for name, call := range multipartCalls(o) {
		if err := call(ctx); !errors.Is(err, context.Canceled) || errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s with a cancelled context = %v, want context.Canceled", name, err)
		}
	}
}

// TestLocalRefusals checks the refusals that need no request.
func TestLocalRefusals(t *testing.T) {
	o := fakeOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("unexpected request %s %s", r.Method, r.URL)
		w.WriteHeader(http.StatusInternalServerError)
	})
	ctx := context.Background()
	for _, id := range []string{"", ".", "..", "../x", `a\..\b`, "a/ .. /b"} {
		if _, err := o.PutPart(ctx, "bucket", "key", id, 1, strings.NewReader("x"), 1); !errors.Is(err, store.ErrNoSuchUpload) {
			t.Errorf("PutPart(upload %q) = %v, want ErrNoSuchUpload", id, err)
		}
	}
	if hasDotSegment("a..b/c.d") || hasDotSegment("0123abc") {
		t.Error("hasDotSegment flags IDs without a dot segment")
	}
	for _, n := range []int{0, -3, store.MaxPartNumber + 1} {
		if _, err := o.PutPart(ctx, "bucket", "key", "id", n, strings.NewReader("x"), 1); !errors.Is(err, store.ErrInvalidPartNumber) {
			t.Errorf("PutPart(part %d) = %v, want ErrInvalidPartNumber", n, err)
		}
	}
	for _, size := range []int64{-1, store.MaxPartSize + 1} {
		if _, err := o.PutPart(ctx, "bucket", "key", "id", 1, strings.NewReader("x"), size); err == nil {
			t.Errorf("PutPart(size %d) succeeded", size)
		}
	}
	bad := []store.CompletePart{{Number: 2, ETag: "a"}, {Number: 1, ETag: "b"}}
	if _, err := o.CompleteUpload(ctx, "bucket", "key", "id", bad); !errors.Is(err, store.ErrInvalidPartOrder) {
		t.Errorf("CompleteUpload(2, 1) = %v, want ErrInvalidPartOrder", err)
	}
	page, err := o.ListUploads(ctx, "bucket", store.UploadListOptions{Prefix: "a/", KeyAfter: "b"})
	if err != nil || len(page.Uploads) != 0 || page.IsTruncated {
		t.Errorf("ListUploads(prefix a/, after b) = %+v, %v; want an empty page", page, err)
	}
}

// xmlUpload and xmlUploads render a ListMultipartUploadsResult.
type xmlUpload struct {
	Key       string
	UploadID  string `xml:"UploadId"`
	Initiated string
}

type xmlUploads struct {
	XMLName            xml.Name `xml:"ListMultipartUploadsResult"`
	Bucket             string
	NextKeyMarker      string
	NextUploadIDMarker string `xml:"NextUploadIdMarker"`
	IsTruncated        bool
	Uploads            []xmlUpload `xml:"Upload"`
	CommonPrefixes     []struct{ Prefix string }
}
