// Engine tests against a real MinIO origin with real RAM and disk tiers.
package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"

	"github.com/granary-dev/granary/internal/miniotest"
	"github.com/granary-dev/granary/internal/poll"
	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/catalog"
	"github.com/granary-dev/granary/store/disk"
	"github.com/granary-dev/granary/store/origin/s3"
	"github.com/granary-dev/granary/store/parts"
	"github.com/granary-dev/granary/store/pins"
	"github.com/granary-dev/granary/store/ram"
	"github.com/granary-dev/granary/store/writeback"
)

var minio *miniotest.Server

func TestMain(m *testing.M) { miniotest.Main(m, &minio) }

// rig is an engine over MinIO with its own bucket and metrics registry.
type rig struct {
	t      testing.TB
	e      *Engine
	origin store.Origin
	reg    *prometheus.Registry
	bucket string
	disk   *disk.Tier
	ram    *ram.Tier
	cat    *catalog.DB
	reads  int
}

type rigOptions struct {
	chunk      int64
	fresh      Freshness
	wrap       func(store.Origin) store.Origin
	diskDir    string
	noPutFill  bool
	workingMax int64
	admitWait  time.Duration        // Options.AdmitWait
	tee        bool                 // write-through multipart fills the cache
	modes      map[string]WriteMode // by bucket; "rig" names the rig's bucket
	catalog    bool                 // open a catalog (warm-ups, LIST from it)
	capacity   int64                // if > 0: the byte budget of each tier
	ramCap     int64                // if > 0: the RAM tier's (over capacity)
	pins       *pins.Set            // given to the tiers and the engine
	quotas     store.Quotas         // given to the tiers and the engine
	metaMax    int                  // Options.MetaEntries
	partSize   int64                // the S3 origin's multipart part size (0: its default)
	singlePut  int64                // the S3 origin's largest single PUT (0: its default)
	observers  []writeback.Observer // of a write-back log, after the engine
	clock      *fakeClock           // Options.Now (nil: time.Now)
}

// fakeClock is a clock a test moves: entries age without waiting.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Now()} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock d ahead.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func newRig(t testing.TB, ro rigOptions) *rig {
	t.Helper()
	o, err := s3.New(s3.Options{Endpoint: minio.Endpoint, AccessKey: minio.AccessKey, SecretKey: minio.SecretKey,
		PartSize: ro.partSize, MaxSinglePut: ro.singlePut})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, origin: o, reg: prometheus.NewRegistry(), bucket: fmt.Sprintf("eng-%d", time.Now().UnixNano())}
	if err := o.MakeBucket(context.Background(), r.bucket); err != nil {
		t.Fatal(err)
	}
	var origin store.Origin = o
	if ro.wrap != nil {
		origin = ro.wrap(o)
	}
	if ro.diskDir == "" {
		ro.diskDir = t.TempDir()
	}
	ramCap, diskCap := int64(256<<20), int64(1<<30)
	if ro.capacity > 0 {
		ramCap, diskCap = ro.capacity, ro.capacity
	}
	if ro.ramCap > 0 {
		ramCap = ro.ramCap
	}
	var pins store.Pins // nil, not a nil *pins.Set, without pins
	if ro.pins != nil {
		pins = ro.pins
	}
	// Every engine test runs over an arena: a lease the engine never
	// releases fails the test that took it.
	r.ram = ram.New(ram.Options{Capacity: ramCap, Pins: pins, Quotas: ro.quotas, Sendable: true})
	t.Cleanup(func() { checkLeases(t, r.ram) })
	r.disk, err = disk.Open(disk.Options{Dir: ro.diskDir, Capacity: diskCap, Pins: pins, Quotas: ro.quotas, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.disk.Close() })
	opts := Options{Origin: origin, Staging: stagingOf(origin), RAM: r.ram, Disk: r.disk, ChunkSize: ro.chunk,
		Freshness: ro.fresh, Registerer: r.reg, Logger: zerolog.Nop(), Pins: pins, Quotas: ro.quotas}
	opts.WorkingBytes, opts.AdmitWait = ro.workingMax, ro.admitWait
	if ro.clock != nil {
		opts.Now = ro.clock.Now
	}
	opts.MetaEntries = ro.metaMax
	if ro.tee {
		opts.Tee = openTee(t)
	}
	if m, ok := ro.modes["rig"]; ok {
		opts.WriteModes = map[string]WriteMode{r.bucket: m}
	}
	if ro.noPutFill {
		opts.PutCacheBytes = -1
	}
	if ro.catalog {
		r.cat, err = catalog.Open(catalog.Options{Path: filepath.Join(t.TempDir(), "catalog.db"), Logger: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.cat.Close() })
		opts.Catalog = r.cat
	}
	if r.e, err = New(opts); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.e.Close() })
	startLog(origin, r.e, ro.observers...)
	return r
}

// startLog starts origin's uploads, observed by e and then by more, if it
// is a write-back log.
func startLog(origin store.Origin, e *Engine, more ...writeback.Observer) {
	if l, ok := origin.(*writeback.Log); ok {
		l.Start(append([]writeback.Observer{e.WriteBackObserver()}, more...)...)
	}
}

// stagingOf is origin as the engine's write-back log if it is one (a
// rig's wrap may put one in front of MinIO), as cmd wires a node: else nil.
func stagingOf(origin store.Origin) store.Staging {
	s, _ := origin.(store.Staging)
	return s
}

// openTee opens an empty tee store for an engine (which closes it).
func openTee(t testing.TB) store.PartTee {
	tee, err := parts.OpenTee(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return tee
}

// seed writes data as key straight to the origin, behind the engine's back.
func (r *rig) seed(key string, data []byte) store.ObjectInfo {
	r.t.Helper()
	info, err := r.origin.Put(context.Background(), r.bucket, key, bytes.NewReader(data), int64(len(data)), store.ObjectMeta{})
	if err != nil {
		r.t.Fatal(err)
	}
	return info
}

func (r *rig) read(key string, rng *Range) []byte {
	r.t.Helper()
	obj, err := r.e.Get(context.Background(), r.bucket, key, GetOptions{Range: rng})
	if err != nil {
		r.t.Fatalf("get %s: %v", key, err)
	}
	defer obj.Close()
	// Alternate between the two ways a server takes a body.
	r.reads++
	var b []byte
	if r.reads%2 == 0 {
		b, err = io.ReadAll(obj)
	} else {
		var buf bytes.Buffer
		_, err = obj.WriteTo(&buf)
		b = buf.Bytes()
	}
	if err != nil {
		r.t.Fatalf("read %s: %v", key, err)
	}
	if int64(len(b)) != obj.Length {
		r.t.Fatalf("read %d bytes, object says %d", len(b), obj.Length)
	}
	return b
}

// originGets is how many object reads reached the origin.
func (r *rig) originGets() int {
	return int(testutil.ToFloat64(r.e.m.originReqs.WithLabelValues("get", "ok")))
}

func (r *rig) originStats() int {
	return int(testutil.ToFloat64(r.e.m.originReqs.WithLabelValues("stat", "ok")))
}

func randBytes(t testing.TB, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestReadThroughThenHit(t *testing.T) {
	r := newRig(t, rigOptions{fresh: Freshness{Mode: Immutable}})
	small := randBytes(t, 4096)
	big := randBytes(t, 3*DefaultChunkSize+12345)
	r.seed("small", small)
	r.seed("big", big)

	if got := r.read("small", nil); !bytes.Equal(got, small) {
		t.Fatal("small: wrong bytes on miss")
	}
	if n := r.originGets(); n != 1 {
		t.Fatalf("cold small read: %d origin gets, want 1 (info and data in one call)", n)
	}
	if n := r.originStats(); n != 0 {
		t.Fatalf("cold small read: %d origin stats, want 0", n)
	}
	if got := r.read("small", nil); !bytes.Equal(got, small) {
		t.Fatal("small: wrong bytes on hit")
	}
	if got := r.read("big", nil); !bytes.Equal(got, big) {
		t.Fatal("big: wrong bytes on miss")
	}
	before := r.originGets()
	if before != 1+4 {
		t.Fatalf("cold big read: %d origin gets in all, want 5 (one per chunk)", before)
	}
	if got := r.read("big", nil); !bytes.Equal(got, big) {
		t.Fatal("big: wrong bytes on hit")
	}
	if r.originGets() != before {
		t.Fatalf("warm reads reached the origin: %d gets, want %d", r.originGets(), before)
	}
}

func TestRangesAcrossChunks(t *testing.T) {
	const chunk = 64 << 10
	r := newRig(t, rigOptions{chunk: chunk, fresh: Freshness{Mode: Immutable}})
	data := randBytes(t, 5*chunk+777)
	r.seed("obj", data)
	size := int64(len(data))
	cases := []Range{
		{Start: 0, End: 0}, {Start: 0, End: -1}, {Start: chunk - 1, End: chunk},
		{Start: chunk, End: 3*chunk - 1}, {Start: 100, End: 4*chunk + 5}, {Start: size - 1, End: -1},
		{Start: 2*chunk + 17, End: size + 1000}, {Suffix: 1}, {Suffix: chunk + 3}, {Suffix: 10 * size},
	}
	for round := 0; round < 2; round++ { // cold, then warm
		for _, c := range cases {
			off, n, err := c.Resolve(size)
			if err != nil {
				t.Fatalf("%+v: %v", c, err)
			}
			if got := r.read("obj", &c); !bytes.Equal(got, data[off:off+n]) {
				t.Fatalf("round %d range %+v: wrong bytes", round, c)
			}
		}
	}
	for _, bad := range []Range{{Start: size, End: -1}, {Start: 5, End: 4}} {
		if _, err := r.e.Get(context.Background(), r.bucket, "obj", GetOptions{Range: &bad}); !errors.Is(err, ErrInvalidRange) {
			t.Fatalf("range %+v: err %v, want ErrInvalidRange", bad, err)
		}
	}
}

func TestReadAheadBudgetLimitsButNeverStalls(t *testing.T) {
	const chunk = 64 << 10
	// Room for one read-ahead chunk in flight at a time.
	r := newRig(t, rigOptions{chunk: chunk, workingMax: chunk, fresh: Freshness{Mode: Immutable}})
	data := randBytes(t, 10*chunk+5)
	r.seed("obj", data)
	if got := r.read("obj", nil); !bytes.Equal(got, data) {
		t.Fatal("wrong bytes with a tight read-ahead budget")
	}
	r.e.Close()
	awaitGoroutines(t, func(string) bool { return true })
	r.e.mu.Lock()
	defer r.e.mu.Unlock()
	if used := r.e.mem.used.Load(); used != 0 || len(r.e.flights) != 0 {
		t.Fatalf("after every flight ended: %d bytes, %d flights counted", used, len(r.e.flights))
	}
}

// checkLeases fails t unless every lease tier lent is released, soon:
// a read-ahead still resolving may hold one for a moment.
func checkLeases(t testing.TB, tier *ram.Tier) {
	t.Helper()
	if err := tier.Sendable(); err != nil {
		t.Errorf("the RAM tier has no arena: %v", err)
	}
	poll.Until(t, "every lease on a RAM chunk released", func() bool { return tier.Leases() == 0 })
}
