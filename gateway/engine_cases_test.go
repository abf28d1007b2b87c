// Engine behaviour under concurrency, change, failure and restart.
package gateway

import (
	"bytes"
	"context"
	"errors"
	"io"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/granary-dev/granary/internal/poll"
	"github.com/granary-dev/granary/store"
)

// gatedOrigin passes reads through, but each body stops after the first
// half-chunk until gate is closed, so a test can see what happens while a
// fetch is in flight.
type gatedOrigin struct {
	store.Origin
	gate chan struct{}
	down atomic.Bool // when set, every call fails as an unreachable origin would
	hang atomic.Bool // when set, Stat answers only when its context ends
	// failGets and stallGets count upcoming Gets that fail as an
	// unreachable origin would, or whose body stops for good after 32 KiB.
	failGets, stallGets atomic.Int32
	stats               atomic.Int32 // Stats asked
}

func (g *gatedOrigin) Get(ctx context.Context, b, k string, r store.ReadRange) (io.ReadCloser, store.ObjectInfo, error) {
	if g.down.Load() {
		return nil, store.ObjectInfo{}, store.ErrUnavailable
	}
	if g.failGets.Add(-1) >= 0 {
		return nil, store.ObjectInfo{}, store.ErrUnavailable
	}
	rc, info, err := g.Origin.Get(ctx, b, k, r)
	if err != nil {
		return nil, info, err
	}
	gate := g.gate
	if g.stallGets.Add(-1) >= 0 {
		gate = ctxGate(ctx) // opens only when the fetch is given up
	}
	return &gatedBody{ReadCloser: rc, gate: gate, before: 32 << 10}, info, nil
}

func (g *gatedOrigin) Stat(ctx context.Context, b, k string) (store.ObjectInfo, error) {
	g.stats.Add(1)
	if g.down.Load() {
		return store.ObjectInfo{}, store.ErrUnavailable
	}
	if g.hang.Load() {
		<-ctx.Done()
		return store.ObjectInfo{}, ctx.Err()
	}
	return g.Origin.Stat(ctx, b, k)
}

// ctxGate is a gate that opens when ctx ends.
func ctxGate(ctx context.Context) chan struct{} {
	c := make(chan struct{})
	go func() { <-ctx.Done(); close(c) }()
	return c
}

type gatedBody struct {
	io.ReadCloser
	gate   chan struct{}
	before int // bytes let through before the gate
}

func (g *gatedBody) Read(p []byte) (int, error) {
	if g.before <= 0 {
		<-g.gate
	} else if len(p) > g.before {
		p = p[:g.before]
	}
	n, err := g.ReadCloser.Read(p)
	g.before -= n
	return n, err
}

func TestConcurrentMissesCollapseAndStream(t *testing.T) {
	g := &gatedOrigin{gate: make(chan struct{})}
	r := newRig(t, rigOptions{fresh: Freshness{Mode: Immutable},
		wrap: func(o store.Origin) store.Origin { g.Origin = o; return g }})
	data := randBytes(t, 2*DefaultChunkSize+100)
	r.seed("obj", data)

	const readers = 16
	var wg sync.WaitGroup
	firstBytes := make(chan struct{}, readers)
	results := make([][]byte, readers)
	errs := make([]error, readers)
	for i := 0; i < readers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			obj, err := r.e.Get(context.Background(), r.bucket, "obj", GetOptions{})
			if err != nil {
				errs[i] = err
				firstBytes <- struct{}{}
				return
			}
			defer obj.Close()
			head := make([]byte, 1024)
			if _, err := io.ReadFull(obj, head); err != nil {
				errs[i] = err
			}
			firstBytes <- struct{}{}
			rest, err := io.ReadAll(obj)
			results[i] = append(head, rest...)
			if err != nil {
				errs[i] = err
			}
		}(i)
	}
	// Every reader gets its first bytes while the origin is still held:
	// a miss streams while it fills.
	for i := 0; i < readers; i++ {
		select {
		case <-firstBytes:
		case <-time.After(30 * time.Second):
			t.Fatal("readers got no bytes while the fetch was in flight")
		}
	}
	close(g.gate)
	wg.Wait()
	for i := range results {
		if errs[i] != nil {
			t.Fatalf("reader %d: %v", i, errs[i])
		}
		if !bytes.Equal(results[i], data) {
			t.Fatalf("reader %d: wrong bytes", i)
		}
	}
	if n := r.originGets(); n != 3 {
		t.Fatalf("%d origin gets for %d concurrent readers of 3 chunks, want 3", n, readers)
	}
}

func TestFreshnessModes(t *testing.T) {
	for _, tc := range []struct {
		fresh   Freshness
		seesNew bool
	}{
		{Freshness{Mode: Immutable}, false},
		{Freshness{Mode: Always}, true},
		{Freshness{Mode: TTL, TTL: 50 * time.Millisecond}, true},
	} {
		t.Run(string(tc.fresh.Mode), func(t *testing.T) {
			clock := newFakeClock()
			r := newRig(t, rigOptions{fresh: tc.fresh, clock: clock})
			r.seed("obj", []byte("version one"))
			if got := r.read("obj", nil); string(got) != "version one" {
				t.Fatalf("got %q", got)
			}
			r.seed("obj", []byte("version two, longer"))
			if got := r.read("obj", nil); tc.fresh.Mode == TTL && string(got) != "version one" {
				t.Fatalf("within the TTL: got %q, want the cached version", got)
			}
			clock.Advance(60 * time.Millisecond) // a 50ms TTL lapses
			got := string(r.read("obj", nil))
			want := map[bool]string{false: "version one", true: "version two, longer"}[tc.seesNew]
			if tc.fresh.Mode == TTL {
				// Stale-while-revalidate: this read may still get the
				// cached version; the new one arrives with the
				// background revalidation.
				poll.Until(t, "the revalidated version", func() bool { return string(r.read("obj", nil)) == want })
				return
			}
			if got != want {
				t.Fatalf("after change at origin: got %q, want %q", got, want)
			}
		})
	}
}

func TestOriginDownServesHitsFailsMissesFast(t *testing.T) {
	g := &gatedOrigin{gate: make(chan struct{})}
	close(g.gate)
	clock := newFakeClock()
	r := newRig(t, rigOptions{fresh: Freshness{Mode: TTL, TTL: time.Minute}, clock: clock,
		wrap: func(o store.Origin) store.Origin { g.Origin = o; return g }})
	r.seed("cached", []byte("hello"))
	r.seed("cold", []byte("never read"))
	r.read("cached", nil)
	g.down.Store(true)
	clock.Advance(2 * time.Minute) // the metadata is now stale
	if got := r.read("cached", nil); string(got) != "hello" {
		t.Fatalf("hit with origin down: got %q", got)
	}
	if _, err := r.e.Get(context.Background(), r.bucket, "cold", GetOptions{}); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("miss with origin down: %v, want ErrUnavailable", err)
	}
}

func TestTransientChunkFailuresAreRetried(t *testing.T) {
	const chunk = 64 << 10
	g := &gatedOrigin{gate: make(chan struct{})}
	close(g.gate)
	r := newRig(t, rigOptions{chunk: chunk, fresh: Freshness{Mode: Immutable},
		wrap: func(o store.Origin) store.Origin { g.Origin = o; return g }})
	// The stall bound: the stalled fetch below costs this much; a fetch
	// that merely runs slow on a busy machine must stay under it.
	r.e.opts.FetchTimeout = 2 * time.Second
	data := randBytes(t, 6*chunk)
	r.seed("obj", data)
	r.read("obj", &Range{Start: 0, End: 0}) // metadata and chunk 0 cached

	g.failGets.Store(1) // one chunk fetch finds the origin unreachable
	if got := r.read("obj", nil); !bytes.Equal(got, data) {
		t.Fatal("wrong bytes after a failed fetch was retried")
	}
	r.e.forgetData(r.bucket, "obj")
	g.stallGets.Store(1) // one chunk fetch stalls for good after 32 KiB
	if got := r.read("obj", nil); !bytes.Equal(got, data) {
		t.Fatal("wrong bytes after a stalled fetch was retried")
	}
	g.failGets.Store(100) // the origin stays down: the read fails, no hang
	r.e.forgetData(r.bucket, "obj")
	obj, err := r.e.Get(context.Background(), r.bucket, "obj", GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()
	if _, err := io.ReadAll(obj); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("read with the origin down: %v, want ErrUnavailable", err)
	}
}

func TestHungOriginServesStaleMetadata(t *testing.T) {
	g := &gatedOrigin{gate: make(chan struct{})}
	close(g.gate)
	clock := newFakeClock()
	r := newRig(t, rigOptions{fresh: Freshness{Mode: TTL, TTL: time.Minute}, clock: clock,
		wrap: func(o store.Origin) store.Origin { g.Origin = o; return g }})
	r.e.opts.FetchTimeout = 200 * time.Millisecond
	r.seed("obj", []byte("cached"))
	r.read("obj", nil)
	g.hang.Store(true)
	clock.Advance(2 * time.Minute) // the metadata is now stale
	if got := r.read("obj", nil); string(got) != "cached" {
		t.Fatalf("with the origin hanging: got %q", got)
	}
	// Served at once; the background revalidation gives up on the hung
	// origin and keeps the stale entry (stale-if-error), once.
	poll.Until(t, "the revalidation to give up", func() bool { return testutil.ToFloat64(r.e.m.staleServed) == 1 })
	if got := r.read("obj", nil); string(got) != "cached" {
		t.Fatalf("with the origin hanging, after the revalidation: got %q", got)
	}
	if n := testutil.ToFloat64(r.e.m.staleServed); n != 1 {
		t.Fatalf("stale served %v times, want 1 (the entry is trusted for another TTL)", n)
	}
}

func TestHeadFreshSeesTheOriginNow(t *testing.T) {
	r := newRig(t, rigOptions{fresh: Freshness{Mode: Immutable}})
	old := r.seed("obj", []byte("one"))
	ctx := context.Background()
	if info, err := r.e.Head(ctx, r.bucket, "obj"); err != nil || info.ETag != old.ETag {
		t.Fatalf("head: %+v, %v", info, err)
	}
	now := r.seed("obj", []byte("two!"))
	if info, _ := r.e.Head(ctx, r.bucket, "obj"); info.ETag != old.ETag {
		t.Fatal("immutable bucket revalidated on a plain Head")
	}
	if info, err := r.e.HeadFresh(ctx, r.bucket, "obj"); err != nil || info.ETag != now.ETag {
		t.Fatalf("HeadFresh: etag %q (%v), want the origin's %q", info.ETag, err, now.ETag)
	}
	if got := r.read("obj", nil); string(got) != "two!" {
		t.Fatalf("after HeadFresh the cache still serves %q", got)
	}
}

func TestWriteThroughIsHitAndDeleteInvalidates(t *testing.T) {
	r := newRig(t, rigOptions{fresh: Freshness{Mode: Immutable}})
	data := randBytes(t, 100<<10)
	ctx := context.Background()
	info, err := r.e.Put(ctx, r.bucket, "w", bytes.NewReader(data), int64(len(data)), store.ObjectMeta{ContentType: "x/y"})
	if err != nil {
		t.Fatal(err)
	}
	at, err := r.origin.Stat(ctx, r.bucket, "w")
	if err != nil || at.ETag != info.ETag || at.Size != int64(len(data)) {
		t.Fatalf("origin has %+v (%v), put said %+v", at, err, info)
	}
	if got := r.read("w", nil); !bytes.Equal(got, data) {
		t.Fatal("wrong bytes after put")
	}
	if n := r.originGets(); n != 0 {
		t.Fatalf("read after write-through went to the origin %d times", n)
	}
	if err := r.e.Delete(ctx, r.bucket, "w"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.e.Get(ctx, r.bucket, "w", GetOptions{}); !errors.Is(err, store.ErrNoSuchKey) {
		t.Fatalf("get after delete: %v, want ErrNoSuchKey", err)
	}
	// Overwrite through the engine is seen at once, even when immutable.
	r.e.Put(ctx, r.bucket, "w", bytes.NewReader([]byte("v1")), 2, store.ObjectMeta{})
	r.read("w", nil)
	r.e.Put(ctx, r.bucket, "w", bytes.NewReader([]byte("v2!")), 3, store.ObjectMeta{})
	if got := r.read("w", nil); string(got) != "v2!" {
		t.Fatalf("after overwrite: %q", got)
	}
}

func TestChangedMidReadNeverMixesVersions(t *testing.T) {
	const chunk = 64 << 10
	r := newRig(t, rigOptions{chunk: chunk, fresh: Freshness{Mode: Immutable}})
	old := randBytes(t, 4*chunk)
	r.seed("obj", old)
	// Cache the metadata and only the first chunk of the old version.
	r.read("obj", &Range{Start: 0, End: 10})
	r.seed("obj", randBytes(t, 4*chunk))
	obj, err := r.e.Get(context.Background(), r.bucket, "obj", GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(obj)
	obj.Close()
	if err == nil {
		t.Fatal("read of a version that changed at the origin succeeded")
	}
	if !bytes.Equal(got, old[:len(got)]) {
		t.Fatal("bytes of two versions were mixed")
	}
	// The next read sees the new version whole.
	if n := len(r.read("obj", nil)); n != 4*chunk {
		t.Fatalf("after change: %d bytes", n)
	}
}

func TestCacheSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	r := newRig(t, rigOptions{diskDir: dir, fresh: Freshness{Mode: Immutable}})
	data := randBytes(t, DefaultChunkSize+5)
	info := r.seed("obj", data)
	r.read("obj", nil)
	// The read may end before its flights stored their chunks (they
	// publish the bytes first).
	poll.Until(t, "the object on the disk tier", func() bool { return r.disk.Held(r.bucket, "obj", info.ETag) == int64(len(data)) })
	r.e.Close()
	r.disk.Close()

	r2 := newRig(t, rigOptions{diskDir: dir, fresh: Freshness{Mode: Immutable}})
	r2.bucket = r.bucket
	if got := r2.read("obj", nil); !bytes.Equal(got, data) {
		t.Fatal("wrong bytes after restart")
	}
	if n := r2.originGets(); n != 0 {
		t.Fatalf("after restart the data came from the origin (%d gets), not the disk tier", n)
	}
}

func TestClosingEarlyLeaksNothing(t *testing.T) {
	r := newRig(t, rigOptions{chunk: 64 << 10, fresh: Freshness{Mode: Immutable}})
	r.seed("obj", randBytes(t, 40*64<<10))
	for i := 0; i < 20; i++ {
		obj, err := r.e.Get(context.Background(), r.bucket, "obj", GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		io.ReadFull(obj, make([]byte, 100<<10))
		obj.Close()
	}
	// Flights started by read-ahead may run on until their chunk is in;
	// after that no goroutine of the engine but its disk filler may remain,
	// and after Close not that either. (Idle origin connections of the HTTP
	// client are the pool's, not a leak.)
	awaitGoroutines(t, func(stack string) bool { return !strings.Contains(stack, "diskFiller).run") })
	r.e.Close()
	awaitGoroutines(t, func(string) bool { return true })
}

// awaitGoroutines waits until no goroutine running this package's code
// (other than the test's own) matches count.
func awaitGoroutines(t *testing.T, count func(stack string) bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		n := engineGoroutines(count)
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d engine goroutines left", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// engineGoroutines counts goroutines running code of this package, other
// than the test's own.
func engineGoroutines(count func(stack string) bool) int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "granary/gateway.") && !strings.Contains(g, "gateway.Test") && count(g) {
			n++
		}
	}
	return n
}
