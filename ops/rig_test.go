// The test rig: an engine over MinIO (behind a switch that can make it
// unreachable) with RAM and disk tiers and a catalog, and its Ops.
package ops

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/granary-dev/granary/gateway"
	"github.com/granary-dev/granary/internal/miniotest"
	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/catalog"
	"github.com/granary-dev/granary/store/disk"
	"github.com/granary-dev/granary/store/origin/s3"
	"github.com/granary-dev/granary/store/pins"
	"github.com/granary-dev/granary/store/ram"
)

var minio *miniotest.Server

func TestMain(m *testing.M) { miniotest.Main(m, &minio) }

// switchOrigin fails every read and listing, as an unreachable origin
// would, while down is set, and counts the object reads that succeed.
type switchOrigin struct {
	store.Origin
	down atomic.Bool
	gets atomic.Int64
}

func (s *switchOrigin) Stat(ctx context.Context, b, k string) (store.ObjectInfo, error) {
	if s.down.Load() {
		return store.ObjectInfo{}, store.ErrUnavailable
	}
	return s.Origin.Stat(ctx, b, k)
}

func (s *switchOrigin) Get(ctx context.Context, b, k string, r store.ReadRange) (io.ReadCloser, store.ObjectInfo, error) {
	if s.down.Load() {
		return nil, store.ObjectInfo{}, store.ErrUnavailable
	}
	rc, info, err := s.Origin.Get(ctx, b, k, r)
	if err == nil {
		s.gets.Add(1)
	}
	return rc, info, err
}

func (s *switchOrigin) List(ctx context.Context, b string, o store.ListOptions) (store.ListPage, error) {
	if s.down.Load() {
		return store.ListPage{}, store.ErrUnavailable
	}
	return s.Origin.List(ctx, b, o)
}

// rig is an engine and its Ops over a bucket of its own.
type rig struct {
	t      *testing.T
	e      *gateway.Engine
	ops    *Ops
	origin *switchOrigin
	bucket string
	ram    *ram.Tier
	disk   *disk.Tier
	cat    *catalog.DB
}

type rigOptions struct {
	capacity int64     // if > 0: each tier's budget
	metaMax  int       // gateway.Options.MetaEntries
	pins     *pins.Set // given to the tiers and the engine
	quotas   store.Quotas
}

func newRig(t *testing.T, ro rigOptions) *rig {
	t.Helper()
	o, err := s3.New(s3.Options{Endpoint: minio.Endpoint, AccessKey: minio.AccessKey, SecretKey: minio.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, origin: &switchOrigin{Origin: o}, bucket: fmt.Sprintf("ops-%d", time.Now().UnixNano())}
	if err := o.MakeBucket(context.Background(), r.bucket); err != nil {
		t.Fatal(err)
	}
	capacity := int64(256 << 20)
	if ro.capacity > 0 {
		capacity = ro.capacity
	}
	var ps store.Pins // nil, not a nil *pins.Set, without pins
	if ro.pins != nil {
		ps = ro.pins
	}
	r.ram = ram.New(ram.Options{Capacity: capacity, Pins: ps, Quotas: ro.quotas})
	if r.disk, err = disk.Open(disk.Options{Dir: t.TempDir(), Capacity: capacity, Pins: ps, Quotas: ro.quotas, Logger: zerolog.Nop()}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.disk.Close() })
	if r.cat, err = catalog.Open(catalog.Options{Path: filepath.Join(t.TempDir(), "catalog.db"), Logger: zerolog.Nop()}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.cat.Close() })
	r.e, err = gateway.New(gateway.Options{Origin: r.origin, RAM: r.ram, Disk: r.disk, ChunkSize: 64 << 10,
		MetaEntries: ro.metaMax, Catalog: r.cat, Pins: ps, Quotas: ro.quotas, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.e.Close() })
	if r.ops, err = New(r.e, Options{Logger: zerolog.Nop()}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.ops.Close() }) // before the engine's
	return r
}

// seed writes data as key straight to the origin, behind the engine's back.
func (r *rig) seed(key string, data []byte) {
	r.t.Helper()
	if _, err := r.origin.Put(context.Background(), r.bucket, key, bytes.NewReader(data), int64(len(data)), store.ObjectMeta{}); err != nil {
		r.t.Fatal(err)
	}
}

// read reads key whole through the engine.
func (r *rig) read(key string) []byte {
	r.t.Helper()
	obj, err := r.e.Get(context.Background(), r.bucket, key, gateway.GetOptions{})
	if err != nil {
		r.t.Fatalf("get %s: %v", key, err)
	}
	defer obj.Close()
	b, err := io.ReadAll(obj)
	if err != nil || int64(len(b)) != obj.Length {
		r.t.Fatalf("read %s: %d of %d bytes, %v", key, len(b), obj.Length, err)
	}
	return b
}

// warm runs a warm-up to its end (bounded) and returns its status.
func (r *rig) warm(spec WarmSpec) WarmStatus {
	r.t.Helper()
	spec.Bucket = r.bucket
	id, err := r.ops.StartWarm(context.Background(), spec)
	if err != nil {
		r.t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		st, ok := r.ops.WarmStatus(id)
		if !ok {
			r.t.Fatalf("job %s vanished", id)
		}
		if st.State != WarmRunning {
			return st
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("warm-up still running after 2 minutes: %+v", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// listAll pages through a listing with the engine.
func (r *rig) listAll(prefix, delim string, maxKeys int) (keys []string, prefixes []string) {
	r.t.Helper()
	opts := store.ListOptions{Prefix: prefix, Delimiter: delim, MaxKeys: maxKeys}
	for {
		page, err := r.e.List(context.Background(), r.bucket, opts)
		if err != nil {
			r.t.Fatalf("list %q: %v", prefix, err)
		}
		for _, o := range page.Objects {
			keys = append(keys, fmt.Sprintf("%s/%d/%s", o.Key, o.Size, o.ETag))
		}
		prefixes = append(prefixes, page.CommonPrefixes...)
		if !page.IsTruncated {
			return keys, prefixes
		}
		opts.After = page.NextAfter
	}
}

func randBytes(t testing.TB, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}
