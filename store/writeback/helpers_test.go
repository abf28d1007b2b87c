// Test helpers: the shared MinIO server, logs in temp directories, and a
// gate origin that holds back, fails or records the writes the uploader
// sends.
package writeback

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/granary-dev/granary/internal/miniotest"
	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/origin/s3"
)

// server is the MinIO every test of the package shares (buckets are per
// test, with random names). A crash child uses its parent's.
var server *miniotest.Server

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(m.Run())
	}
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

// opTimeout bounds every wait of a test.
const opTimeout = 30 * time.Second

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), opTimeout)
	t.Cleanup(cancel)
	return ctx
}

// s3Origin returns an origin on the shared server.
func s3Origin(t testing.TB) *s3.Origin {
	t.Helper()
	o, err := s3.New(s3.Options{Endpoint: server.Endpoint, AccessKey: server.AccessKey, SecretKey: server.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// newBucket makes a bucket at o and drops it (emptied) when the test ends.
func newBucket(t *testing.T, o store.Origin) string {
	t.Helper()
	var rnd [6]byte
	rand.Read(rnd[:])
	name := "wb-" + hex.EncodeToString(rnd[:])
	if err := o.MakeBucket(testCtx(t), name); err != nil {
		t.Fatalf("MakeBucket(%s): %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		page, _ := o.List(ctx, name, store.ListOptions{})
		for _, obj := range page.Objects {
			o.Delete(ctx, name, obj.Key)
		}
		o.RemoveBucket(ctx, name)
	})
	return name
}

func always(string) bool { return true }

// openLog opens a log with quick retries in a temp dir (unless opts say
// otherwise) and closes it when the test ends.
func openLog(t *testing.T, opts Options, observers ...Observer) *Log {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	if opts.RetryMin == 0 {
		opts.RetryMin, opts.RetryMax = 10*time.Millisecond, 200*time.Millisecond
	}
	l, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	l.Start(observers...)
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return l
}

// flush flushes all of bucket and fails the test on error.
func flush(t *testing.T, l *Log, bucket string) {
	t.Helper()
	if err := l.Flush(testCtx(t), bucket, "", nil); err != nil {
		t.Fatalf("Flush(%s): %v", bucket, err)
	}
}

// payload returns n deterministic bytes for seed.
func payload(n int, seed uint64) []byte {
	var s [32]byte
	for i := range 8 {
		s[i] = byte(seed >> (8 * i))
	}
	b := make([]byte, n)
	mrand.NewChaCha8(s).Read(b)
	return b
}

func md5Hex(b []byte) string {
	sum := md5.Sum(b)
	return hex.EncodeToString(sum[:])
}

func put(t *testing.T, o store.Origin, bucket, key string, data []byte) store.ObjectInfo {
	t.Helper()
	info, err := o.Put(testCtx(t), bucket, key, bytes.NewReader(data), int64(len(data)), store.ObjectMeta{})
	if err != nil {
		t.Fatalf("Put(%s/%s): %v", bucket, key, err)
	}
	return info
}

// read returns the whole of bucket/key at o.
func read(t *testing.T, o store.Origin, bucket, key string) ([]byte, store.ObjectInfo) {
	t.Helper()
	rc, info, err := o.Get(testCtx(t), bucket, key, store.ReadRange{Length: -1})
	if err != nil {
		t.Fatalf("Get(%s/%s): %v", bucket, key, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read %s/%s: %v", bucket, key, err)
	}
	return data, info
}

// wantData asserts that o holds exactly data as bucket/key.
func wantData(t *testing.T, o store.Origin, bucket, key string, data []byte) store.ObjectInfo {
	t.Helper()
	got, info := read(t, o, bucket, key)
	if !bytes.Equal(got, data) {
		t.Fatalf("%s/%s: %d bytes, differing from the %d expected", bucket, key, len(got), len(data))
	}
	return info
}

func wantMissing(t *testing.T, o store.Origin, bucket, key string) {
	t.Helper()
	if info, err := o.Stat(testCtx(t), bucket, key); !errors.Is(err, store.ErrNoSuchKey) {
		t.Fatalf("Stat(%s/%s) = %+v, %v; want ErrNoSuchKey", bucket, key, info, err)
	}
}

// directKey marks a context whose writes pass the gate at once (the
// test's own pass-through writes, as opposed to the uploader's).
type directKey struct{}

func directCtx(ctx context.Context) context.Context { return context.WithValue(ctx, directKey{}, true) }

// event is a write that reached the origin through a gate.
type event struct{ kind, key, etag string }

// gate wraps an origin: writes (Put, Delete, the multipart calls) wait
// while it is shut and fail while it is down; landed writes are recorded
// in order. Reads pass.
type gate struct {
	store.Origin
	mp store.Multipart

	mu       sync.Mutex
	openCh   chan struct{} // closed while open
	down     error
	events   []event
	attempts chan string // keys of gated write attempts (dropped when full)
}

func newGate(inner store.Origin, open bool) *gate {
	g := &gate{Origin: inner, openCh: make(chan struct{}), attempts: make(chan string, 1000)}
	g.mp, _ = inner.(store.Multipart)
	if open {
		close(g.openCh)
	}
	return g
}

// Open lets writes through.
func (g *gate) Open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.openCh:
	default:
		close(g.openCh)
	}
}

// SetDown makes writes fail with err (nil: work again).
func (g *gate) SetDown(err error) {
	g.mu.Lock()
	g.down = err
	g.mu.Unlock()
}

func (g *gate) Events() []event {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]event(nil), g.events...)
}

func (g *gate) record(e event) {
	g.mu.Lock()
	g.events = append(g.events, e)
	g.mu.Unlock()
}

// pass waits until a write of key may go on.
func (g *gate) pass(ctx context.Context, key string) error {
	if ctx.Value(directKey{}) != nil {
		return nil
	}
	select {
	case g.attempts <- key:
	default:
	}
	g.mu.Lock()
	ch := g.openCh
	g.mu.Unlock()
	select {
	case <-ch:
	case <-ctx.Done():
		return ctx.Err()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.down
}

// awaitAttempt waits until the gate saw a write attempt of key.
func (g *gate) awaitAttempt(t *testing.T, key string) {
	t.Helper()
	timeout := time.After(opTimeout)
	for {
		select {
		case k := <-g.attempts:
			if k == key {
				return
			}
		case <-timeout:
			t.Fatalf("no upload of %s started", key)
		}
	}
}

func (g *gate) Put(ctx context.Context, bucket, key string, body io.Reader, size int64, meta store.ObjectMeta) (store.ObjectInfo, error) {
	if err := g.pass(ctx, key); err != nil {
		return store.ObjectInfo{}, err
	}
	info, err := g.Origin.Put(ctx, bucket, key, body, size, meta)
	if err == nil {
		g.record(event{"put", key, info.ETag})
	}
	return info, err
}

func (g *gate) Delete(ctx context.Context, bucket, key string) error {
	if err := g.pass(ctx, key); err != nil {
		return err
	}
	err := g.Origin.Delete(ctx, bucket, key)
	if err == nil {
		g.record(event{"delete", key, ""})
	}
	return err
}

func (g *gate) Copy(ctx context.Context, srcBucket, srcKey, dstBucket, dstKey string, meta *store.ObjectMeta) (store.ObjectInfo, error) {
	if err := g.pass(ctx, dstKey); err != nil {
		return store.ObjectInfo{}, err
	}
	info, err := g.Origin.(store.Copier).Copy(ctx, srcBucket, srcKey, dstBucket, dstKey, meta)
	if err == nil {
		g.record(event{"put", dstKey, info.ETag})
	}
	return info, err
}

func (g *gate) NewUpload(ctx context.Context, bucket, key string, meta store.ObjectMeta) (string, error) {
	if err := g.pass(ctx, key); err != nil {
		return "", err
	}
	return g.mp.NewUpload(ctx, bucket, key, meta)
}

func (g *gate) PutPart(ctx context.Context, bucket, key, uploadID string, number int, body io.Reader, size int64) (store.PartInfo, error) {
	if err := g.pass(ctx, key); err != nil {
		return store.PartInfo{}, err
	}
	return g.mp.PutPart(ctx, bucket, key, uploadID, number, body, size)
}

func (g *gate) CompleteUpload(ctx context.Context, bucket, key, uploadID string, parts []store.CompletePart) (store.ObjectInfo, error) {
	if err := g.pass(ctx, key); err != nil {
		return store.ObjectInfo{}, err
	}
	info, err := g.mp.CompleteUpload(ctx, bucket, key, uploadID, parts)
	if err == nil {
		g.record(event{"put", key, info.ETag})
	}
	return info, err
}

func (g *gate) AbortUpload(ctx context.Context, bucket, key, uploadID string) error {
	return g.mp.AbortUpload(ctx, bucket, key, uploadID)
}

func (g *gate) ListParts(ctx context.Context, bucket, key, uploadID string, opts store.PartListOptions) (store.PartPage, error) {
	return g.mp.ListParts(ctx, bucket, key, uploadID, opts)
}

func (g *gate) ListUploads(ctx context.Context, bucket string, opts store.UploadListOptions) (store.UploadPage, error) {
	return g.mp.ListUploads(ctx, bucket, opts)
}

// hooks is an Observer of functions; a nil one does nothing.
type hooks struct {
	staged    func(ctx context.Context, staged store.ObjectInfo, open func() (io.ReadCloser, error)) error
	persisted func(staged store.ObjectInfo, originETag string)
}

func (h hooks) Staged(ctx context.Context, staged store.ObjectInfo, open func() (io.ReadCloser, error)) error {
	if h.staged == nil {
		return nil
	}
	return h.staged(ctx, staged, open)
}

func (h hooks) Persisted(staged store.ObjectInfo, originETag string) {
	if h.persisted != nil {
		h.persisted(staged, originETag)
	}
}
