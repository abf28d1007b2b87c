// The engine in front of a sick origin: a real MinIO behind a proxy that
// hangs or refuses, guarded as a node guards it. Cached objects keep being
// served with their bytes; misses fail at once once the breaker is open;
// an `always` bucket waits a bounded time. Bounds are generous multiples
// of the origin timeout, never tight.
package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/granary-dev/granary/internal/faultproxy"
	"github.com/granary-dev/granary/internal/goroutines"
	"github.com/granary-dev/granary/internal/poll"
	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/origin/guard"
	"github.com/granary-dev/granary/store/origin/s3"
	"github.com/granary-dev/granary/store/ram"
)

const faultTimeout = 300 * time.Millisecond

// faultRig is an engine over a guarded MinIO reached through a proxy.
type faultRig struct {
	e      *Engine
	g      *guard.Guard
	proxy  *faultproxy.Proxy
	clock  *fakeClock
	bucket string
	bound  time.Duration // the longest a read may take: 10x the origin timeout, at most 15 s
}

// newFaultRig makes one bucket per freshness rule, named after it.
func newFaultRig(t *testing.T, buckets map[string]Freshness) *faultRig {
	t.Helper()
	return newFaultRigTimeout(t, buckets, faultTimeout)
}

// newFaultRigTimeout is newFaultRig with the origin timeout given.
func newFaultRigTimeout(t *testing.T, buckets map[string]Freshness, timeout time.Duration) *faultRig {
	t.Helper()
	p, err := faultproxy.Start(minio.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	inner, err := s3.New(s3.Options{Endpoint: p.Addr(), AccessKey: minio.AccessKey, SecretKey: minio.SecretKey,
		DialTimeout: timeout, ResponseHeaderTimeout: timeout, MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	// A MinIO just started may answer "not initialized" a while.
	poll.Until(t, "MinIO to answer", func() bool { _, err := inner.ListBuckets(context.Background()); return err == nil })
	g, err := guard.New(guard.Options{Origin: inner, Timeout: timeout, ProbeInterval: 50 * time.Millisecond, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	r := &faultRig{g: g, proxy: p, clock: newFakeClock(), bucket: fmt.Sprintf("faults-%d", time.Now().UnixNano()),
		bound: min(10*timeout, 15*time.Second)}
	named := map[string]Freshness{}
	for suffix, f := range buckets {
		named[r.bucket+suffix] = f
		if err := g.Origin().MakeBucket(context.Background(), r.bucket+suffix); err != nil {
			t.Fatal(err)
		}
	}
	r.e, err = New(Options{Origin: g.Origin(), RAM: ram.New(ram.Options{Capacity: 64 << 20}), ChunkSize: 64 << 10,
		Buckets: named, Now: r.clock.Now, OriginTimeout: timeout, Health: g, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// close stops the engine, the guard and the proxy, in that order.
func (r *faultRig) close() {
	r.e.Close()
	r.g.Close()
	r.proxy.Close()
}

func (r *faultRig) put(t *testing.T, bucket, key string, data []byte) {
	t.Helper()
	if _, err := r.e.Put(context.Background(), bucket, key, bytes.NewReader(data), int64(len(data)), store.ObjectMeta{}); err != nil {
		t.Fatal(err)
	}
}

// read GETs bucket/key, failing t if it took longer than r.bound.
func (r *faultRig) read(t *testing.T, bucket, key string) ([]byte, error) {
	t.Helper()
	start := time.Now()
	defer func() {
		if d := time.Since(start); d > r.bound {
			t.Errorf("GET %s/%s took %v, more than %v", bucket, key, d, r.bound)
		}
	}()
	obj, err := r.e.Get(context.Background(), bucket, key, GetOptions{})
	if err != nil {
		return nil, err
	}
	defer obj.Close()
	return io.ReadAll(obj)
}

// TestCachedReadsThroughAHungOrigin: with metadata past its TTL and the
// origin hung, then refused, cached objects are served with their bytes,
// revalidated in the background; misses fail with ErrOriginDown once the
// breaker is open; nothing is left running after Close.
func TestCachedReadsThroughAHungOrigin(t *testing.T) {
	before := goroutines.Snapshot()
	r := newFaultRig(t, map[string]Freshness{"-ttl": {Mode: TTL, TTL: time.Minute}})
	b := r.bucket + "-ttl"
	objs := map[string][]byte{}
	for i := range 8 {
		key := fmt.Sprintf("obj-%d", i)
		objs[key] = bytes.Repeat([]byte{byte(i + 1)}, 100<<10)
		r.put(t, b, key, objs[key])
		if got, err := r.read(t, b, key); err != nil || !bytes.Equal(got, objs[key]) {
			t.Fatalf("warming %s: %d bytes, %v", key, len(got), err)
		}
	}
	ctx := context.Background()
	listed, err := r.e.List(ctx, b, store.ListOptions{})
	if err != nil || len(listed.Objects) != len(objs) {
		t.Fatalf("list: %d objects, %v", len(listed.Objects), err)
	}
	for _, mode := range []faultproxy.Mode{faultproxy.Hang, faultproxy.Refuse} {
		if err := r.proxy.Set(mode); err != nil {
			t.Fatal(err)
		}
		r.clock.Advance(2 * time.Minute) // every entry past its TTL
		for round := range 3 {
			for key, want := range objs {
				got, err := r.read(t, b, key)
				if err != nil || !bytes.Equal(got, want) {
					t.Fatalf("%v, round %d: GET %s: %d bytes, %v; want the cached %d bytes", mode, round, key, len(got), err, len(want))
				}
			}
		}
		if page, err := r.e.List(ctx, b, store.ListOptions{}); err != nil || len(page.Objects) != len(objs) {
			t.Fatalf("%v: a cached listing past its TTL: %d objects, %v", mode, len(page.Objects), err)
		}
		poll.Until(t, "the background revalidations to open the breaker", func() bool { return !r.g.Health().Up() })
		_, err := r.read(t, b, "never-cached-"+mode.String())
		if !errors.Is(err, store.ErrOriginDown) {
			t.Fatalf("%v: a miss with the breaker open: %v, want ErrOriginDown", mode, err)
		}
	}
	if err := r.proxy.Set(faultproxy.Forward); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the origin to be up again", func() bool { return r.g.Health().Up() })
	if _, err := r.read(t, b, "never-cached"); !errors.Is(err, store.ErrNoSuchKey) {
		t.Fatalf("a miss once the origin is back: %v, want NoSuchKey", err)
	}
	r.close()
	if err := goroutines.Leaked(before, 30*time.Second); err != nil {
		t.Fatal(err)
	}
}

// TestStaleServedWithoutWaiting: with an origin timeout of a minute and
// the origin hung, a read past the TTL is answered long before the
// revalidation could end, and Close ends that revalidation at once.
func TestStaleServedWithoutWaiting(t *testing.T) {
	before := goroutines.Snapshot()
	r := newFaultRigTimeout(t, map[string]Freshness{"-ttl": {Mode: TTL, TTL: time.Minute}}, time.Minute)
	b := r.bucket + "-ttl"
	data := bytes.Repeat([]byte("s"), 10<<10)
	r.put(t, b, "k", data)
	if err := r.proxy.Set(faultproxy.Hang); err != nil {
		t.Fatal(err)
	}
	// Each read is past the TTL. A revalidation may first fail at once
	// on a pooled connection the proxy dropped (and keep the stale entry
	// another TTL); the next one waits on the hung origin.
	poll.Until(t, "a revalidation waiting on the hung origin", func() bool {
		r.clock.Advance(2 * time.Minute)
		if got, err := r.read(t, b, "k"); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("stale read: %d bytes, %v", len(got), err)
		}
		return r.e.revalidating() == 1
	})
	// The reads go on at once while it waits.
	for range 5 {
		r.clock.Advance(2 * time.Minute)
		if got, err := r.read(t, b, "k"); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("stale read with a revalidation waiting: %d bytes, %v", len(got), err)
		}
	}
	start := time.Now()
	r.close()
	if d := time.Since(start); d > 15*time.Second {
		t.Fatalf("Close waited %v for a revalidation", d)
	}
	if err := goroutines.Leaked(before, 30*time.Second); err != nil {
		t.Fatal(err)
	}
}

// TestStaleRevalidatedInTheBackground: a read past the TTL is answered
// from the cache and the change the origin holds arrives with the
// background revalidation.
func TestStaleRevalidatedInTheBackground(t *testing.T) {
	r := newFaultRig(t, map[string]Freshness{"-ttl": {Mode: TTL, TTL: time.Minute}})
	defer r.close()
	b := r.bucket + "-ttl"
	r.put(t, b, "k", []byte("old version"))
	if got, err := r.read(t, b, "k"); err != nil || string(got) != "old version" {
		t.Fatalf("first read: %q, %v", got, err)
	}
	// The cached copy is stored after the answer: a read past the TTL
	// is served from it only once it is there (without it, the read
	// finds the old version gone from the origin and fails).
	info, err := r.e.Head(context.Background(), b, "k")
	if err != nil {
		t.Fatal(err)
	}
	chunk := store.ChunkID{Bucket: b, Key: "k", ETag: info.ETag}
	poll.Until(t, "the old version's chunk in RAM", func() bool { _, err := tierGet(r.e.opts.RAM, chunk, false); return err == nil })
	// Changed at the origin behind the node's back.
	if _, err := r.g.Origin().Put(context.Background(), b, "k", bytes.NewReader([]byte("new version")), 11, store.ObjectMeta{}); err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(2 * time.Minute)
	got, err := r.read(t, b, "k")
	if err != nil || (string(got) != "old version" && string(got) != "new version") {
		t.Fatalf("read past the TTL: %q, %v", got, err)
	}
	poll.Until(t, "the revalidation to bring the new version", func() bool {
		got, err := r.read(t, b, "k")
		return err == nil && string(got) == "new version"
	})
}

// TestAlwaysWaitsAtMostTheOriginTimeout: an `always` bucket waits for the
// hung origin a bounded time, then serves the stale copy; one that may
// not serve stale metadata fails with ErrUnavailable instead.
func TestAlwaysWaitsAtMostTheOriginTimeout(t *testing.T) {
	r := newFaultRig(t, map[string]Freshness{
		"-always": {Mode: Always},
		"-strict": {Mode: Always, NoStale: true},
	})
	defer r.close()
	data := bytes.Repeat([]byte("a"), 10<<10)
	for _, s := range []string{"-always", "-strict"} {
		r.put(t, r.bucket+s, "k", data)
	}
	if err := r.proxy.Set(faultproxy.Hang); err != nil {
		t.Fatal(err)
	}
	got, err := r.read(t, r.bucket+"-always", "k")
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("always bucket, hung origin: %d bytes, %v; want the stale copy", len(got), err)
	}
	_, err = r.read(t, r.bucket+"-strict", "k")
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("always bucket without stale copies, hung origin: %v, want ErrUnavailable", err)
	}
}

// With the origin down, a node that never saw an object (and whose owner
// of the first chunk lost its metadata) takes the object's info from any
// member that has it cached, however old (here: past its TTL at once),
// and serves it from the owners' tiers, as a node that had seen it would
// serve it stale.
func TestClusterOriginDownInfoFromAMember(t *testing.T) {
	var gates []*gatedOrigin
	fresh := Freshness{Mode: TTL, TTL: time.Nanosecond}
	c := newFakeCluster(t, fakeClusterOptions{n: 3, owners: 1, chunk: 64 << 10, fresh: &fresh,
		wrap: func(o store.Origin) store.Origin {
			g := &gatedOrigin{Origin: o, gate: make(chan struct{})}
			close(g.gate)
			gates = append(gates, g)
			return g
		}})
	data := randBytes(t, 150<<10)
	newRigFor(t, c).seed("seen-once", data)
	owner := c.chunkOwner("seen-once", 0)
	seer, newcomer := (owner+1)%3, (owner+2)%3
	c.wantRead(seer, "seen-once", data, "with the origin up")
	settle(t, c.engines[seer])
	c.engines[owner].meta.dropAll() // the owner lost the object's info (evicted, say)
	for _, g := range gates {
		g.down.Store(true)
	}
	c.wantRead(newcomer, "seen-once", data, "with the origin down, through a node that never saw it")
}
