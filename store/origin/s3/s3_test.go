// Tests of the S3 origin against a real MinIO server: the conformance
// suite, plus failure modes only a network origin has.
package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/granary-dev/granary/internal/miniotest"
	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/storetest"
)

// server is the MinIO every test of the package shares (buckets are per
// test, with random names).
var server *miniotest.Server

func TestMain(m *testing.M) {
	s, err := miniotest.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	server = s
	code := m.Run()
	s.Stop()
	os.Exit(code)
}

func newOrigin(t *testing.T, opts Options) *Origin {
	t.Helper()
	if opts.Endpoint == "" {
		opts.Endpoint = server.Endpoint
		opts.AccessKey, opts.SecretKey = server.AccessKey, server.SecretKey
	}
	o, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestConformance(t *testing.T) {
	// Whole: objects of known size go as one PUT (the default). Parts:
	// the smallest legal part size and single PUT, so the suite's 12 MiB
	// objects take the multipart path.
	for name, opts := range map[string]Options{
		"Whole": {PartSize: 5 << 20},
		"Parts": {PartSize: 5 << 20, MaxSinglePut: 5 << 20},
	} {
		t.Run(name, func(t *testing.T) {
			storetest.RunOrigin(t, func(t *testing.T) store.Origin { return newOrigin(t, opts) })
		})
	}
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// within fails the test if call takes longer than limit, and returns its
// error.
func within(t *testing.T, limit time.Duration, what string, call func() error) error {
	t.Helper()
	start := time.Now()
	err := call()
	if took := time.Since(start); took > limit {
		t.Errorf("%s took %v against a down origin, limit %v", what, took, limit)
	}
	return err
}

func TestOriginDownFailsFast(t *testing.T) {
	o := newOrigin(t, Options{Endpoint: closedPort(t), AccessKey: "k", SecretKey: "secret-key"})
	ctx := context.Background()
	const limit = 15 * time.Second
	calls := map[string]func() error{
		"Stat": func() error { _, err := o.Stat(ctx, "bucket", "key"); return err },
		"Get": func() error {
			_, _, err := o.Get(ctx, "bucket", "key", store.ReadRange{Length: -1})
			return err
		},
		"Put": func() error {
			_, err := o.Put(ctx, "bucket", "key", strings.NewReader("data"), 4, store.ObjectMeta{})
			return err
		},
		"PutUnknownSize": func() error {
			_, err := o.Put(ctx, "bucket", "key", strings.NewReader("data"), -1, store.ObjectMeta{})
			return err
		},
		"List":        func() error { _, err := o.List(ctx, "bucket", store.ListOptions{}); return err },
		"ListBuckets": func() error { _, err := o.ListBuckets(ctx); return err },
		"StatBucket":  func() error { return o.StatBucket(ctx, "bucket") },
		"Delete":      func() error { return o.Delete(ctx, "bucket", "key") },
	}
	for name, call := range calls {
		if err := within(t, limit, name, call); !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s against a closed port = %v, want ErrUnavailable", name, err)
		}
	}
}

func TestServerStopsMidway(t *testing.T) {
	srv := miniotest.StartT(t)
	o := newOrigin(t, Options{Endpoint: srv.Endpoint, AccessKey: srv.AccessKey, SecretKey: srv.SecretKey})
	ctx := context.Background()
	if err := o.MakeBucket(ctx, "going-away"); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Put(ctx, "going-away", "k", strings.NewReader("v"), 1, store.ObjectMeta{}); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	err := within(t, 15*time.Second, "Stat", func() error { _, err := o.Stat(ctx, "going-away", "k"); return err })
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Stat after the server stopped = %v, want ErrUnavailable", err)
	}
}

// TestServerErrors checks the mapping of error responses and that
// retries are bounded, against a fake server that always answers with one
// error.
func TestServerErrors(t *testing.T) {
	for _, c := range []struct {
		status int
		code   string
		want   error
	}{
		{http.StatusServiceUnavailable, "SlowDown", store.ErrUnavailable},
		{http.StatusInternalServerError, "InternalError", store.ErrUnavailable},
		{http.StatusBadGateway, "SomethingNew", store.ErrUnavailable},
		{http.StatusForbidden, "InvalidAccessKeyId", store.ErrAccessDenied},
		{http.StatusForbidden, "SignatureDoesNotMatch", store.ErrAccessDenied},
		{http.StatusNotFound, "NoSuchBucket", store.ErrNoSuchBucket},
		{http.StatusPreconditionFailed, "PreconditionFailed", store.ErrPreconditionFailed},
		{http.StatusConflict, "BucketNotEmpty", store.ErrBucketNotEmpty},
	} {
		t.Run(c.code, func(t *testing.T) {
			fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/xml")
				w.WriteHeader(c.status)
				fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>fake</Message></Error>`, c.code)
			}))
			defer fake.Close()
			o := newOrigin(t, Options{Endpoint: strings.TrimPrefix(fake.URL, "http://"), AccessKey: "k", SecretKey: "secret-key"})
			_, err := o.List(context.Background(), "bucket", store.ListOptions{})
			if !errors.Is(err, c.want) {
				t.Fatalf("List answered %d %s = %v, want %v", c.status, c.code, err, c.want)
			}
			if n := o.Requests(); n < 1 || n > defaultAttempts {
				t.Fatalf("%d requests sent, want 1..%d", n, defaultAttempts)
			}
		})
	}
}

func TestRequestsCounted(t *testing.T) {
	o := newOrigin(t, Options{})
	ctx := context.Background()
	before := o.Requests()
	if _, err := o.ListBuckets(ctx); err != nil {
		t.Fatal(err)
	}
	if got := o.Requests() - before; got != 1 {
		t.Fatalf("ListBuckets counted %d requests, want 1", got)
	}
}

// TestFailedMultipartIsAborted checks that a large Put whose body fails
// leaves no incomplete upload behind on the server.
func TestFailedMultipartIsAborted(t *testing.T) {
	o := newOrigin(t, Options{PartSize: 5 << 20, MaxSinglePut: 5 << 20})
	ctx := context.Background()
	bucket := fmt.Sprintf("abort-%d", time.Now().UnixNano())
	if err := o.MakeBucket(ctx, bucket); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.RemoveBucket(context.Background(), bucket) })
	body := &failAfter{r: bytes.NewReader(make([]byte, 12<<20)), n: 11 << 20}
	if _, err := o.Put(ctx, bucket, "big", body, 12<<20, store.ObjectMeta{}); err == nil {
		t.Fatal("Put of a failing body succeeded")
	}
	res, err := o.core.ListMultipartUploads(ctx, bucket, "", "", "", "", 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Uploads) != 0 {
		t.Fatalf("%d incomplete uploads left behind", len(res.Uploads))
	}
}

// failAfter yields n bytes of r, then fails.
type failAfter struct {
	r *bytes.Reader
	n int
}

func (f *failAfter) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, errors.New("client went away")
	}
	p = p[:min(len(p), f.n)]
	n, err := f.r.Read(p)
	f.n -= n
	return n, err
}

func TestOptionsValidation(t *testing.T) {
	if _, err := New(Options{}); err == nil {
		t.Error("New without an endpoint succeeded")
	}
	if _, err := New(Options{Endpoint: "127.0.0.1:1", PartSize: 1 << 20}); err == nil {
		t.Error("New with a 1 MiB part size succeeded")
	}
	for _, n := range []int64{-1, 5<<30 + 1} {
		if _, err := New(Options{Endpoint: "127.0.0.1:1", MaxSinglePut: n}); err == nil {
			t.Errorf("New with MaxSinglePut %d succeeded", n)
		}
	}
}

// TestRangeIgnoredByServer checks that a server answering a ranged GET
// with the whole object still yields only the range.
func TestRangeIgnoredByServer(t *testing.T) {
	const content = "0123456789"
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"0123abcd"`)
		w.Header().Set("Last-Modified", time.Now().UTC().Format(http.TimeFormat))
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Length", fmt.Sprint(len(content)))
		fmt.Fprint(w, content)
	}))
	defer fake.Close()
	o := newOrigin(t, Options{Endpoint: strings.TrimPrefix(fake.URL, "http://"), AccessKey: "k", SecretKey: "secret-key"})
	for _, c := range []struct {
		r    store.ReadRange
		want string
	}{
		{store.ReadRange{Offset: 3, Length: 4}, "3456"},
		{store.ReadRange{Offset: 5, Length: -1}, "56789"},
		{store.ReadRange{Offset: 0, Length: 2}, "01"},
	} {
		rc, info, err := o.Get(context.Background(), "bucket", "key", c.r)
		if err != nil {
			t.Fatalf("Get(%+v): %v", c.r, err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || string(got) != c.want || info.Size != int64(len(content)) || info.ETag != "0123abcd" {
			t.Errorf("Get(%+v) = %q (size %d, ETag %s, err %v), want %q", c.r, got, info.Size, info.ETag, err, c.want)
		}
	}
}

// TestHungServerFails checks that a server that accepts connections but
// never answers fails requests instead of hanging them.
func TestHungServerFails(t *testing.T) {
	o := newOrigin(t, Options{Endpoint: hungServer(t), AccessKey: "k", SecretKey: "secret-key",
		ResponseHeaderTimeout: 300 * time.Millisecond})
	err := within(t, 15*time.Second, "Stat", func() error {
		_, err := o.Stat(context.Background(), "bucket", "key")
		return err
	})
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Stat against a hung server = %v, want ErrUnavailable", err)
	}
}

// hungServer is the address of a server that accepts connections and
// reads them, but never answers; it closes when t ends.
func hungServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(io.Discard, c); c.Close() }() // read, never answer
		}
	}()
	return l.Addr().String()
}

// TestListEndsWithItsContext: a listing of a hung server ends when its
// caller's context does, not after the transport's timeouts (a minute
// here, and minio-go would have tried three times).
func TestListEndsWithItsContext(t *testing.T) {
	o := newOrigin(t, Options{Endpoint: hungServer(t), AccessKey: "k", SecretKey: "secret-key",
		ResponseHeaderTimeout: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := within(t, 20*time.Second, "List", func() error {
		_, err := o.List(ctx, "bucket", store.ListOptions{Prefix: "p/", Delimiter: "/"})
		return err
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("List of a hung server past its context = %v, want context.DeadlineExceeded", err)
	}
}

// TestCallerCancellation checks that a caller's own cancellation is
// reported as such, not blamed on the origin.
func TestCallerCancellation(t *testing.T) {
	o := newOrigin(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := o.Stat(ctx, "bucket", "key")
	if !errors.Is(err, context.Canceled) || errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Stat with a cancelled context = %v, want context.Canceled", err)
	}
	_, err = o.List(ctx, "bucket", store.ListOptions{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("List with a cancelled context = %v, want context.Canceled", err)
	}
}
