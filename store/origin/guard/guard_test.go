// The guard against real parts: a real MinIO, reached through a proxy that
// turns into a hung origin, one that stalls its bodies, or a refused port;
// an unresolvable name; TLS mismatches. Time bounds are generous (a
// multiple of the timeout), never tight.
package guard

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/granary-dev/granary/internal/faultproxy"
	"github.com/granary-dev/granary/internal/goroutines"
	"github.com/granary-dev/granary/internal/miniotest"
	"github.com/granary-dev/granary/internal/poll"
	"github.com/granary-dev/granary/internal/syncbuf"
	"github.com/granary-dev/granary/internal/testcerts"
	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/origin/s3"
)

var minio *miniotest.Server

func TestMain(m *testing.M) { miniotest.Main(m, &minio) }

// testTimeout is the origin timeout of these tests; bound is what a
// bounded call may take at most on a busy machine.
const (
	testTimeout = 300 * time.Millisecond
	bound       = 10 * testTimeout
)

// rig is a guard over an s3 origin at endpoint, logging to log.
type rig struct {
	g     *Guard
	o     store.Origin
	log   *syncbuf.Buffer
	proxy *faultproxy.Proxy // nil unless through one
}

func newRig(t *testing.T, opts s3.Options) *rig {
	t.Helper()
	if opts.AccessKey == "" {
		opts.AccessKey, opts.SecretKey = minio.AccessKey, minio.SecretKey
	}
	opts.DialTimeout, opts.ResponseHeaderTimeout = testTimeout, testTimeout
	// One attempt: minio-go's backoff between retries is longer than
	// this test timeout, and would leave only "timeout" to report.
	opts.MaxAttempts = 1
	inner, err := s3.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{log: &syncbuf.Buffer{}}
	r.g, err = New(Options{Origin: inner, Name: opts.Endpoint, Timeout: testTimeout,
		ProbeInterval: 50 * time.Millisecond, Logger: zerolog.New(r.log)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.g.Close() })
	r.o = r.g.Origin()
	return r
}

// proxied is a rig reaching MinIO through a fault proxy.
func proxied(t *testing.T) *rig {
	t.Helper()
	p, err := faultproxy.Start(minio.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	r := newRig(t, s3.Options{Endpoint: p.Addr()})
	r.proxy = p
	return r
}

// lines counts the log lines whose message starts with msg.
func (r *rig) lines(msg string) int {
	return strings.Count(r.log.String(), `"message":"`+msg)
}

// within runs f and fails t if it took longer than bound.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	start := time.Now()
	f()
	if d := time.Since(start); d > bound {
		t.Fatalf("%s took %v, more than %v (10x the origin timeout)", what, d, bound)
	}
}

func makeBucket(t *testing.T, o store.Origin, name string) {
	t.Helper()
	if err := o.MakeBucket(context.Background(), name); err != nil && !errors.Is(err, store.ErrBucketExists) {
		t.Fatal(err)
	}
}

func TestHealthyOriginPassesThrough(t *testing.T) {
	r := newRig(t, s3.Options{Endpoint: minio.Endpoint})
	if err := r.g.Check(context.Background()); err != nil {
		t.Fatalf("check of a healthy MinIO: %v", err)
	}
	if h := r.g.Health(); h.State != StateUp || h.Breaker != "closed" {
		t.Fatalf("health after a good check: %+v", h)
	}
	if _, ok := r.o.(store.Multipart); !ok {
		t.Fatal("the guarded s3 origin lost store.Multipart")
	}
	if _, ok := r.o.(store.Copier); !ok {
		t.Fatal("the guarded s3 origin lost store.Copier")
	}
	ctx := context.Background()
	makeBucket(t, r.o, "guard-healthy")
	data := bytes.Repeat([]byte("granary "), 64<<10)
	if _, err := r.o.Put(ctx, "guard-healthy", "k", bytes.NewReader(data), int64(len(data)), store.ObjectMeta{}); err != nil {
		t.Fatal(err)
	}
	rc, _, err := r.o.Get(ctx, "guard-healthy", "k", store.ReadRange{Length: -1})
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes, %v", len(got), err)
	}
	if _, err := r.o.Stat(ctx, "guard-healthy", "missing"); !errors.Is(err, store.ErrNoSuchKey) {
		t.Fatalf("stat of a missing key: %v", err)
	}
	if h := r.g.Health(); h.State != StateUp || h.Failures != 0 || r.lines("origin up") != 1 {
		t.Fatalf("an answering origin is up, with no failures and one log line: %+v\n%s", h, r.log)
	}
}

// TestHungOriginOpensTheBreaker: a hung origin costs a bounded wait per
// call until the breaker opens, then nothing; one log line says it went
// down and why, one that it came back.
func TestHungOriginOpensTheBreaker(t *testing.T) {
	before := goroutines.Snapshot()
	r := proxied(t)
	ctx := context.Background()
	makeBucket(t, r.o, "guard-hung")
	if err := r.proxy.Set(faultproxy.Hang); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		var err error
		within(t, "a stat of a hung origin", func() { _, err = r.o.Stat(ctx, "guard-hung", "k") })
		if !errors.Is(err, store.ErrUnavailable) || Classify(err) != CauseTimeout {
			t.Fatalf("stat %d of a hung origin: %v (cause %q), want unavailable, timeout", i, err, Classify(err))
		}
	}
	h := r.g.Health()
	if h.State != StateDown || h.Breaker != "open" || h.Cause != CauseTimeout || h.Timeouts < 3 {
		t.Fatalf("after 3 timeouts: %+v", h)
	}
	start := time.Now()
	for range 50 {
		if _, err := r.o.Stat(ctx, "guard-hung", "k"); !errors.Is(err, store.ErrOriginDown) {
			t.Fatalf("stat with the breaker open: %v, want ErrOriginDown", err)
		}
	}
	if d := time.Since(start); d > bound {
		t.Fatalf("50 calls with the breaker open took %v", d)
	}
	if n := r.lines("origin down"); n != 1 {
		t.Fatalf("%d 'origin down' lines, want 1:\n%s", n, r.log)
	}
	if err := r.proxy.Set(faultproxy.Forward); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the probe to close the breaker", func() bool { return r.g.Health().State == StateUp })
	if _, err := r.o.Stat(ctx, "guard-hung", "k"); !errors.Is(err, store.ErrNoSuchKey) {
		t.Fatalf("stat after recovery: %v, want NoSuchKey from the origin", err)
	}
	if n, m := r.lines("origin down"), r.lines("origin up again"); n != 1 || m != 1 {
		t.Fatalf("%d 'origin down' and %d 'origin up again' lines, want 1 each:\n%s", n, m, r.log)
	}
	r.g.Close()
	r.proxy.Close()
	if err := goroutines.Leaked(before, 30*time.Second); err != nil {
		t.Fatal(err)
	}
}

// TestStalledBody: headers arrive, the body never does: the read fails
// within a bound, as unavailable.
func TestStalledBody(t *testing.T) {
	r := proxied(t)
	ctx := context.Background()
	makeBucket(t, r.o, "guard-stall")
	data := bytes.Repeat([]byte("x"), 1<<20)
	if _, err := r.o.Put(ctx, "guard-stall", "k", bytes.NewReader(data), int64(len(data)), store.ObjectMeta{}); err != nil {
		t.Fatal(err)
	}
	if err := r.proxy.Set(faultproxy.StallBody); err != nil {
		t.Fatal(err)
	}
	var rc io.ReadCloser
	var err error
	within(t, "a get whose headers come", func() { rc, _, err = r.o.Get(ctx, "guard-stall", "k", store.ReadRange{Length: -1}) })
	if err != nil {
		t.Fatalf("get with headers answered: %v", err)
	}
	defer rc.Close()
	within(t, "a read of a stalled body", func() { _, err = io.ReadAll(rc) })
	if !errors.Is(err, store.ErrUnavailable) || Classify(err) != CauseTimeout {
		t.Fatalf("read of a stalled body: %v (cause %q)", err, Classify(err))
	}
	if h := r.g.Health(); h.Timeouts != 1 {
		t.Fatalf("one stalled body is one timeout: %+v", h)
	}
}

// TestCallerGivingUpIsNotTheOrigins: calls the caller cancels say nothing
// about the origin and never open the breaker.
func TestCallerGivingUpIsNotTheOrigins(t *testing.T) {
	r := proxied(t)
	if err := r.proxy.Set(faultproxy.Hang); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout/10)
		_, err := r.o.Stat(ctx, "guard-cancel", "k")
		cancel()
		if err == nil {
			t.Fatal("stat of a hung origin succeeded")
		}
	}
	if h := r.g.Health(); h.State == StateDown || h.Failures != 0 {
		t.Fatalf("cancelled calls counted against the origin: %+v", h)
	}
}

// TestCheckNamesTheCause: the start-up check of an origin that cannot be
// reached fails with the cause, opens the breaker at once and logs one
// line naming it.
func TestCheckNamesTheCause(t *testing.T) {
	ca := testcerts.NewCA(t)
	untrusted := httptest.NewUnstartedServer(nil) // its own CA, not ca
	untrusted.Config.ErrorLog = log.New(io.Discard, "", 0)
	untrusted.StartTLS()
	defer untrusted.Close()
	cases := []struct {
		name  string
		opts  s3.Options
		cause string
	}{
		{"refused", s3.Options{Endpoint: closedPort(t)}, CauseRefused},
		{"dns", s3.Options{Endpoint: "granary-no-such-host.invalid:9000"}, CauseDNS},
		{"tls to plain http", s3.Options{Endpoint: minio.Endpoint, Secure: true, RootCAs: ca.Pool()}, CauseTLS},
		{"untrusted certificate", s3.Options{Endpoint: untrusted.Listener.Addr().String(), Secure: true, RootCAs: ca.Pool()}, CauseTLS},
		{"hung", s3.Options{Endpoint: hungAddr(t)}, CauseTimeout},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, c.opts)
			var err error
			within(t, "the check", func() { err = r.g.Check(context.Background()) })
			if err == nil || Classify(err) != c.cause {
				t.Fatalf("check: %v (cause %q), want cause %q", err, Classify(err), c.cause)
			}
			h := r.g.Health()
			if h.State != StateDown || h.Cause != c.cause || h.LastError == "" {
				t.Fatalf("health: %+v", h)
			}
			if _, err := r.o.Stat(context.Background(), "guard-check", "k"); !errors.Is(err, store.ErrOriginDown) {
				t.Fatalf("a call after a failed check: %v, want ErrOriginDown at once", err)
			}
			if n := r.lines("origin down: " + c.cause); n != 1 {
				t.Fatalf("%d lines naming the cause, want 1:\n%s", n, r.log)
			}
		})
	}
}

// TestCheckDenied: an origin that answers 403 is up (the breaker stays
// closed), and the check says the credentials are refused.
func TestCheckDenied(t *testing.T) {
	r := newRig(t, s3.Options{Endpoint: minio.Endpoint, AccessKey: minio.AccessKey, SecretKey: "not-the-secret"})
	err := r.g.Check(context.Background())
	if Classify(err) != CauseDenied {
		t.Fatalf("check with a wrong secret: %v (cause %q), want denied", err, Classify(err))
	}
	if h := r.g.Health(); h.State != StateUp || h.Cause != CauseDenied {
		t.Fatalf("health: %+v", h)
	}
	if !strings.Contains(r.log.String(), "check the origin credentials") {
		t.Fatalf("no line about the credentials:\n%s", r.log)
	}
}

// TestRefusedThenBack: a refused port opens the breaker after Threshold
// calls; when the server listens again the probe closes it.
func TestRefusedThenBack(t *testing.T) {
	r := proxied(t)
	if err := r.proxy.Set(faultproxy.Refuse); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := r.o.Stat(context.Background(), "guard-refused", "k"); Classify(err) != CauseRefused {
			t.Fatalf("stat of a refused port: %v", err)
		}
	}
	if h := r.g.Health(); h.State != StateDown || h.Cause != CauseRefused {
		t.Fatalf("health: %+v", h)
	}
	if err := r.proxy.Set(faultproxy.Forward); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the origin to be up again", func() bool { return r.g.Health().State == StateUp })
}

// closedPort is a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// hungAddr is a proxy that accepts and never answers.
func hungAddr(t *testing.T) string {
	p, err := faultproxy.Start(minio.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	if err := p.Set(faultproxy.Hang); err != nil {
		t.Fatal(err)
	}
	return p.Addr()
}
