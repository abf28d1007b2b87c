// An in-process cluster for unit tests: engines over one origin, each
// with its own tiers, whose peer calls go straight to the other engine's
// peer backend, with faults the test injects (a member down, a body cut
// mid-chunk).
package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"

	"github.com/granary-dev/granary/cluster"
	"github.com/granary-dev/granary/cluster/peer"
	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/catalog"
	"github.com/granary-dev/granary/store/disk"
	"github.com/granary-dev/granary/store/ram"
)

// fakeCluster is n engines; member i is "n<i>".
type fakeCluster struct {
	t       *testing.T
	members []cluster.Member
	engines []*Engine
	regs    []*prometheus.Registry
	ring    *cluster.Ring // guarded by mu once the engines run

	mu     sync.Mutex
	down   map[string]bool  // members that refuse every call
	mute   map[string]bool  // members listed live whose calls fail (hung)
	old    map[string]bool  // members of an older version: no first call
	heirs  []cluster.Member // if set, every member's Heirs
	cut    map[string]int64 // members whose chunk bodies end after this many bytes
	calls  map[string]int   // "from>to op" -> calls made
	bucket string
}

type fakeClusterOptions struct {
	n, owners  int // members, Options.Owners
	chunk      int64
	wrap       func(store.Origin) store.Origin // per-engine origin (else the rig's)
	modes      map[string]WriteMode            // by bucket; "rig" names the bucket
	catalog    bool                            // each engine gets a catalog
	fresh      *Freshness                      // the engines' rule (default immutable)
	hot        int64                           // each hot tier's capacity (default 64 MiB)
	disk       int64                           // if set, each engine's disk budget, shared by owned chunks and hot copies
	everywhere func(bucket, key string) bool   // Options.Everywhere
}

func newFakeCluster(t *testing.T, o fakeClusterOptions) *fakeCluster {
	t.Helper()
	base := newRig(t, rigOptions{chunk: o.chunk})
	c := &fakeCluster{t: t, down: map[string]bool{}, mute: map[string]bool{}, old: map[string]bool{}, cut: map[string]int64{}, calls: map[string]int{}, bucket: base.bucket}
	var ids []string
	for i := range o.n {
		id := fmt.Sprintf("n%d", i)
		ids = append(ids, id)
		c.members = append(c.members, cluster.Member{ID: id, Addr: id + ":0"})
	}
	var err error
	if c.ring, err = cluster.NewRing(ids); err != nil {
		t.Fatal(err)
	}
	fresh := Freshness{Mode: Immutable}
	if o.fresh != nil {
		fresh = *o.fresh
	}
	hot := int64(64 << 20)
	if o.hot != 0 {
		hot = o.hot
	}
	for i := range o.n {
		origin := base.origin
		if o.wrap != nil {
			origin = o.wrap(origin)
		}
		reg := prometheus.NewRegistry()
		mem, copies := ram.New(ram.Options{Capacity: 256 << 20, Sendable: true}), ram.New(ram.Options{Capacity: hot, Sendable: true})
		t.Cleanup(func() { checkLeases(t, mem); checkLeases(t, copies) })
		opts := Options{Origin: origin, Staging: stagingOf(origin), RAM: mem, Hot: copies,
			ChunkSize: o.chunk, Freshness: fresh, Registerer: reg, Logger: zerolog.Nop(),
			Peers: &fakePeers{c: c, self: i}, Owners: o.owners, Everywhere: o.everywhere, Tee: openTee(t)}
		if m, ok := o.modes["rig"]; ok {
			opts.WriteModes = map[string]WriteMode{c.bucket: m}
		}
		if o.disk > 0 {
			opts.Disk, opts.HotDisk = openSharedDisk(t, o.disk)
			opts.DiskQueueBytes = 64 << 20
		}
		if o.catalog {
			cat, err := catalog.Open(catalog.Options{Path: filepath.Join(t.TempDir(), "catalog.db"), Logger: zerolog.Nop()})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cat.Close() })
			opts.Catalog = cat
		}
		e, err := New(opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		startLog(origin, e)
		c.engines = append(c.engines, e)
		c.regs = append(c.regs, reg)
	}
	return c
}

// openSharedDisk opens a disk tier of owned chunks and one of hot copies
// over one budget, as a cluster node's are.
func openSharedDisk(t *testing.T, budget int64) (owned, hot *disk.Tier) {
	t.Helper()
	s := disk.NewShared(budget)
	var err error
	if owned, err = disk.Open(disk.Options{Dir: t.TempDir(), Capacity: budget, Shared: s}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { owned.Close() })
	if hot, err = disk.Open(disk.Options{Dir: t.TempDir(), Capacity: budget, Shared: s, Yields: true}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hot.Close() })
	return owned, hot
}

// live is the members not down, in ID order.
func (c *fakeCluster) live() []cluster.Member {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []cluster.Member
	for _, m := range c.members {
		if !c.down[m.ID] {
			out = append(out, m)
		}
	}
	return out
}

func (c *fakeCluster) member(id string) (int, bool) {
	for i, m := range c.members {
		if m.ID == id {
			return i, true
		}
	}
	return 0, false
}

// owners is the first n owners of key in the ring of all members.
func (c *fakeCluster) owners(key []byte, n int) []cluster.Member {
	c.mu.Lock()
	ring := c.ring
	c.mu.Unlock()
	var out []cluster.Member
	for _, id := range ring.Owners(key, n) {
		i, _ := c.member(id)
		out = append(out, c.members[i])
	}
	return out
}

// chunkOwner is the index of chunk idx's first owner.
func (c *fakeCluster) chunkOwner(key string, idx int64) int {
	i, _ := c.member(c.ring.Owners(cluster.ChunkKey(c.bucket, key, idx), 1)[0])
	return i
}

// hopsFrom is how many of key's first n chunks node reader does not own.
func (c *fakeCluster) hopsFrom(reader int, key string, n int64) int {
	hops := 0
	for i := range n {
		if c.chunkOwner(key, i) != reader {
			hops++
		}
	}
	return hops
}

// aReader is a node that owns some but not all of key's first n chunks,
// and how many it does not own. Member IDs, and so the owners, differ from
// run to run; any one node owns all n now and then, never two of them.
func (c *fakeCluster) aReader(t *testing.T, key string, n int64) (reader, hops int) {
	t.Helper()
	for i := range c.engines {
		if h := c.hopsFrom(i, key, n); h > 0 {
			return i, h
		}
	}
	t.Fatalf("no node reads %s through an owner", key)
	return 0, 0
}

// originGets is the object reads that reached the origin, over all engines.
func (c *fakeCluster) originGets() int {
	n := 0
	for _, e := range c.engines {
		n += int(testutil.ToFloat64(e.m.originReqs.WithLabelValues("get", "ok")))
	}
	return n
}

func (c *fakeCluster) count(from, to int, op string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[fmt.Sprintf("%d>%d %s", from, to, op)]
}

// read reads key whole through engine i.
func (c *fakeCluster) read(i int, key string) ([]byte, error) {
	obj, err := c.engines[i].Get(context.Background(), c.bucket, key, GetOptions{})
	if err != nil {
		return nil, err
	}
	defer obj.Close()
	return io.ReadAll(obj)
}

// fakePeers is member self's view of the cluster: the live members, the
// ring of all members (as a node's ring before it notices a death).
type fakePeers struct {
	c    *fakeCluster
	self int
}

func (p *fakePeers) Self() cluster.Member      { return p.c.members[p.self] }
func (p *fakePeers) Members() []cluster.Member { return p.c.live() }
func (p *fakePeers) Known() []cluster.Member   { return p.c.members }
func (p *fakePeers) Owners(key []byte, n int) []cluster.Member {
	return p.c.owners(key, n)
}

// Heirs is key's owner in the ring of the other members, or what the
// test set in c.heirs.
func (p *fakePeers) Heirs(key []byte) []cluster.Member {
	p.c.mu.Lock()
	set := p.c.heirs
	p.c.mu.Unlock()
	if set != nil {
		return set
	}
	var others []string
	for _, m := range p.c.members {
		if m.ID != p.Self().ID {
			others = append(others, m.ID)
		}
	}
	ring, err := cluster.NewRing(others)
	if err != nil {
		return nil
	}
	i, _ := p.c.member(ring.Owners(key, 1)[0])
	return []cluster.Member{p.c.members[i]}
}

func (p *fakePeers) Client() PeerClient { return fakeClient{p} }

// fakeClient makes member p.self's calls on the other engines' peer
// backends.
type fakeClient struct{ p *fakePeers }

var errDown = errors.New("fake peer: connection refused")

func (f fakeClient) Timeout() time.Duration { return time.Second }

// to finds the engine of member m and records the call, or fails as a
// down member does.
func (f fakeClient) to(m cluster.Member, op string) (*Engine, error) {
	c := f.p.c
	i, ok := c.member(m.ID)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[fmt.Sprintf("%d>%d %s", f.p.self, i, op)]++
	if !ok || c.down[m.ID] || c.mute[m.ID] {
		return nil, fmt.Errorf("peer %s: %w", m.ID, errDown)
	}
	return c.engines[i], nil
}

func (f fakeClient) GetChunk(ctx context.Context, to cluster.Member, r peer.ChunkRequest) (io.ReadCloser, error) {
	op := "get"
	if r.CachedOnly {
		op = "get-cached"
	}
	e, err := f.to(to, op)
	if err != nil {
		return nil, err
	}
	if inReader() {
		f.to(to, op+" in reader") //nolint:errcheck // counted above
	}
	body, err := e.PeerBackend().Chunk(ctx, r)
	if err != nil {
		return nil, err
	}
	return f.cutAt(to, body, r.Len-r.Off), nil
}

// inReader reports whether the call came from an objectReader's own
// lookup of the chunk it sends next, not a goroutine it started.
func inReader() bool {
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	for {
		fr, more := frames.Next()
		if strings.HasSuffix(fr.Function, "gateway.(*objectReader).fill") {
			return true
		}
		if !more {
			return false
		}
	}
}

// cutAt is body (left bytes) as member to sends it: ended early, if the
// test cut it, after the cut's bytes.
func (f fakeClient) cutAt(to cluster.Member, body io.Reader, left int64) io.ReadCloser {
	f.p.c.mu.Lock()
	cut, ok := f.p.c.cut[to.ID]
	f.p.c.mu.Unlock()
	var c io.Closer = io.NopCloser(nil)
	if bc, ok := body.(io.Closer); ok {
		c = bc // as the peer server closes the answer's body once sent
	}
	if ok && cut < left {
		// The member dies after cut bytes: the body ends early.
		return closingReader{io.MultiReader(io.LimitReader(body, cut), errReader{io.ErrUnexpectedEOF}), c}
	}
	return closingReader{io.LimitReader(body, left), c}
}

// closingReader reads one reader and closes another.
type closingReader struct {
	io.Reader
	io.Closer
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

func (f fakeClient) PutChunk(_ context.Context, to cluster.Member, id store.ChunkID, chunk int64, data []byte) error {
	e, err := f.to(to, "put")
	if err != nil {
		return err
	}
	return e.PeerBackend().StoreChunk(peer.ChunkRequest{ID: id, Len: int64(len(data)), Chunk: chunk}, data)
}

func (f fakeClient) Forget(_ context.Context, to cluster.Member, bucket, key string, written *store.ObjectInfo) error {
	e, err := f.to(to, "forget")
	if err != nil {
		return err
	}
	e.PeerBackend().Forget(bucket, key, written, f.p.Self().ID)
	return nil
}

func (f fakeClient) ForgetAll(_ context.Context, to cluster.Member) error {
	e, err := f.to(to, "forget-all")
	if err != nil {
		return err
	}
	e.PeerBackend().ForgetAll(f.p.Self().ID)
	return nil
}

func (f fakeClient) Coverage(_ context.Context, to cluster.Member) ([]peer.Cover, error) {
	e, err := f.to(to, "coverage")
	if err != nil {
		return nil, err
	}
	return e.PeerBackend().(peer.Lister).Coverage()
}

func (f fakeClient) ListCached(ctx context.Context, to cluster.Member, bucket string, opts store.ListOptions) (store.ListPage, error) {
	e, err := f.to(to, "list")
	if err != nil {
		return store.ListPage{}, err
	}
	return e.PeerBackend().(peer.Lister).ListCached(ctx, bucket, opts)
}

func (f fakeClient) HeadStale(_ context.Context, to cluster.Member, bucket, key string) (store.ObjectInfo, error) {
	e, err := f.to(to, "head-stale")
	if err != nil {
		return store.ObjectInfo{}, err
	}
	return e.PeerBackend().(peer.StaleHeader).HeadStale(bucket, key)
}

func (f fakeClient) Head(ctx context.Context, to cluster.Member, bucket, key string, cachedOnly bool) (store.ObjectInfo, error) {
	e, err := f.to(to, "head")
	if err != nil {
		return store.ObjectInfo{}, err
	}
	return e.PeerBackend().Head(ctx, bucket, key, cachedOnly)
}

// GetFirst is the owner's Head then its Chunk of that version, as the
// peer handler answers it, recorded as one call ("first"); a cut member's
// body ends early as GetChunk's does.
func (f fakeClient) GetFirst(ctx context.Context, to cluster.Member, bucket, key string, chunk int64) (store.ObjectInfo, io.ReadCloser, error) {
	e, err := f.to(to, "first")
	if err != nil {
		return store.ObjectInfo{}, nil, err
	}
	f.p.c.mu.Lock()
	old := f.p.c.old[to.ID]
	f.p.c.mu.Unlock()
	if old {
		return store.ObjectInfo{}, nil, fmt.Errorf("peer %s: %w", to.ID, peer.ErrNotSupported)
	}
	info, err := e.PeerBackend().Head(ctx, bucket, key, false)
	if err != nil || info.Size == 0 {
		return info, io.NopCloser(strings.NewReader("")), err
	}
	r := peer.ChunkRequest{ID: store.ChunkID{Bucket: bucket, Key: key, ETag: info.ETag}, Len: min(info.Size, chunk), Chunk: chunk}
	body, err := e.PeerBackend().Chunk(ctx, r)
	if err != nil {
		return store.ObjectInfo{}, nil, err
	}
	return info, f.cutAt(to, body, r.Len), nil
}

// settle waits until e has no fill, flight or chunk placement in
// progress (a flight places its chunk before it retires).
func settle(t *testing.T, e *Engine) {
	t.Helper()
	e.fills.Wait()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		e.mu.Lock()
		n := len(e.flights)
		e.mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d flights still in the air after a minute", n)
		}
	}
	e.peer.pushes.Wait()
}
