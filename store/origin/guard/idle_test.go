// The idle probe against a real MinIO behind a proxy: an origin that dies
// while nothing asks it is found down (and back) by the guard itself; no
// probe is sent while calls keep the origin busy; Close leaves nothing
// running. And an origin's 4xx is an answer, never a failure.
package guard

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/granary-dev/granary/internal/faultproxy"
	"github.com/granary-dev/granary/internal/goroutines"
	"github.com/granary-dev/granary/internal/poll"
	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/origin/s3"
)

// idleTimeout is the origin timeout of these tests: nothing waits for it
// but a hung origin, so it is generous for a busy machine.
const idleTimeout = 2 * time.Second

// idleRig is a guard with an idle probe every idle over MinIO reached
// through a proxy, and the s3 origin it guards (which counts requests),
// once MinIO answers.
func idleRig(t *testing.T, idle time.Duration) (*Guard, *s3.Origin, *faultproxy.Proxy) {
	t.Helper()
	p, err := faultproxy.Start(minio.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	inner, err := s3.New(s3.Options{Endpoint: p.Addr(), AccessKey: minio.AccessKey, SecretKey: minio.SecretKey,
		DialTimeout: idleTimeout, ResponseHeaderTimeout: idleTimeout, MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "MinIO to answer", func() bool { _, err := inner.ListBuckets(context.Background()); return err == nil })
	g, err := New(Options{Origin: inner, Name: p.Addr(), Timeout: idleTimeout, ProbeInterval: 50 * time.Millisecond,
		IdleProbe: idle, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g, inner, p
}

// TestIdleProbeFindsADeadOrigin: nothing calls the origin; the guard finds
// it down once it refuses, opens the breaker, and up once it answers.
func TestIdleProbeFindsADeadOrigin(t *testing.T) {
	before := goroutines.Snapshot()
	g, _, p := idleRig(t, 100*time.Millisecond)
	poll.Until(t, "the idle probe to find the origin up", func() bool { return g.Health().State == StateUp })
	for _, mode := range []faultproxy.Mode{faultproxy.Refuse, faultproxy.Hang} {
		if err := p.Set(mode); err != nil {
			t.Fatal(err)
		}
		poll.Until(t, "the idle probe to find the origin down ("+mode.String()+")", func() bool {
			h := g.Health()
			return h.State == StateDown && h.Breaker == "open"
		})
		if err := p.Set(faultproxy.Forward); err != nil {
			t.Fatal(err)
		}
		poll.Until(t, "the origin to be up again", func() bool { return g.Health().State == StateUp })
	}
	g.Close()
	p.Close()
	if err := goroutines.Leaked(before, 30*time.Second); err != nil {
		t.Fatal(err)
	}
}

// TestNoIdleProbeUnderTraffic: while calls reach the origin more often
// than the idle interval (for longer than it), every request the origin
// gets is one of theirs; once they stop, the guard asks it itself.
func TestNoIdleProbeUnderTraffic(t *testing.T) {
	// Calls come every few ms; an idle interval far longer leaves room
	// for a call slowed by a busy machine.
	g, inner, _ := idleRig(t, 5*time.Second)
	o := g.Origin()
	ctx := context.Background()
	makeBucket(t, o, "guard-idle")
	start, sent := inner.Requests(), int64(0)
	for deadline := time.Now().Add(8 * time.Second); time.Now().Before(deadline); sent++ {
		if _, err := o.Stat(ctx, "guard-idle", "missing"); !errors.Is(err, store.ErrNoSuchKey) {
			t.Fatalf("stat: %v", err)
		}
	}
	if got := inner.Requests() - start; got != sent {
		t.Fatalf("the origin got %d requests during %d calls: the guard probed a busy origin", got, sent)
	}
	poll.Until(t, "the idle probe to ask the origin", func() bool { return inner.Requests()-start > sent })
}

// TestOriginRefusalIsNoFailure: an origin's 4xx (here MinIO refusing a
// prefix of "../") reaches the caller as a store.OriginError, and the
// origin stays up with no failure counted: the client erred.
func TestOriginRefusalIsNoFailure(t *testing.T) {
	g, _, _ := idleRig(t, -1)
	o := g.Origin()
	makeBucket(t, o, "guard-refusal")
	for i := range 5 {
		_, err := o.List(context.Background(), "guard-refusal", store.ListOptions{Prefix: "../../"})
		var oe *store.OriginError
		if !errors.As(err, &oe) || oe.Status/100 != 4 {
			t.Fatalf("list %d of prefix ../../: %v, want a 4xx store.OriginError", i, err)
		}
	}
	if h := g.Health(); h.State != StateUp || h.Failures != 0 {
		t.Fatalf("after 5 refusals: %+v, want up with no failures", h)
	}
}
