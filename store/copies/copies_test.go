// Tests of the write-back replica store: durability and replacement of
// copies, body checks, crash recovery, and takeovers against a directory
// origin and a real MinIO (including a dead one).
package copies

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.etcd.io/bbolt"

	"github.com/granary-dev/granary/internal/miniotest"
	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/origin/fs"
	"github.com/granary-dev/granary/store/origin/s3"
)

const repTimeout = 60 * time.Second

func repCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), repTimeout)
	t.Cleanup(cancel)
	return ctx
}

// repFSOrigin is a directory origin with one bucket, "bkt".
func repFSOrigin(t *testing.T) *fs.Origin {
	t.Helper()
	o, err := fs.New(fs.Options{Root: t.TempDir()})
	repMust(t, err)
	t.Cleanup(func() { o.Close() })
	repMust(t, o.MakeBucket(repCtx(t), "bkt"))
	return o
}

// repS3Origin is an S3 origin over srv with one bucket, "bkt"; it gives up
// fast when srv is down.
func repS3Origin(t *testing.T, srv *miniotest.Server) *s3.Origin {
	t.Helper()
	o, err := s3.New(s3.Options{Endpoint: srv.Endpoint, AccessKey: srv.AccessKey, SecretKey: srv.SecretKey,
		MaxAttempts: 1, DialTimeout: time.Second})
	repMust(t, err)
	// A fresh MinIO may answer its health check before it serves S3
	// ("server not initialized"): retry, within the test's deadline.
	ctx := repCtx(t)
	for {
		err := o.MakeBucket(ctx, "bkt")
		if err == nil {
			return o
		}
		if !errors.Is(err, store.ErrUnavailable) || ctx.Err() != nil {
			t.Fatal(err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func repOpen(t *testing.T, dir string, o store.Origin) *Store {
	t.Helper()
	r, err := Open(dir, o, zerolog.Nop())
	repMust(t, err)
	t.Cleanup(func() { r.Close() })
	return r
}

// repVersion is one object repVersion as a primary would send it: its ETag is
// the MD5 of its bytes, as the directory origin computes it.
func repVersion(bucket, key string, data []byte, modified time.Time) store.ObjectInfo {
	sum := md5.Sum(data)
	return store.ObjectInfo{Bucket: bucket, Key: key, Size: int64(len(data)), ETag: hex.EncodeToString(sum[:]),
		LastModified: modified, ObjectMeta: store.ObjectMeta{ContentType: "application/x-test",
			User: map[string]string{"writer": key}}}
}

func repBytes(n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

func repPut(t *testing.T, r *Store, primary string, info store.ObjectInfo, data []byte) {
	t.Helper()
	if err := r.Put(repCtx(t), primary, info, bytes.NewReader(data)); err != nil {
		t.Fatalf("Put %s %s/%s: %v", primary, info.Bucket, info.Key, err)
	}
}

// repDataFiles lists the replica data directory.
func repDataFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, dataDirName))
	repMust(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func repWantPrimaries(t *testing.T, r *Store, want map[string]int) {
	t.Helper()
	if got := r.Primaries(); !maps.Equal(got, want) {
		t.Fatalf("Primaries = %v, want %v", got, want)
	}
}

// repOriginHas checks the origin holds data (by SHA-256) under bkt/key.
func repOriginHas(t *testing.T, o store.Origin, key string, data []byte) store.ObjectInfo {
	t.Helper()
	rc, info, err := o.Get(repCtx(t), "bkt", key, store.ReadRange{Length: -1})
	if err != nil {
		t.Fatalf("origin Get %s: %v", key, err)
	}
	defer rc.Close()
	h := sha256.New()
	if _, err := io.Copy(h, rc); err != nil {
		t.Fatal(err)
	}
	if got, want := h.Sum(nil), sha256.Sum256(data); !bytes.Equal(got, want[:]) {
		t.Fatalf("origin %s: sha256 %x, want %x", key, got, want)
	}
	return info
}

func TestCopiesRoundTripMinIO(t *testing.T) {
	o := repS3Origin(t, miniotest.StartT(t))
	dir := t.TempDir()
	r := repOpen(t, dir, o)
	past := time.Now().Add(-time.Minute)
	objs := map[string][]byte{"a/big": repBytes(3<<20+17, 1), "a/small": repBytes(100, 2),
		"a/empty": {}, "dropped": repBytes(1000, 3)}
	for key, data := range objs {
		repPut(t, r, "node-a", repVersion("bkt", key, data, past), data)
	}
	other := repBytes(50, 4)
	repPut(t, r, "node-b", repVersion("bkt", "b", other, past), other)
	repWantPrimaries(t, r, map[string]int{"node-a": 4, "node-b": 1})
	// The primary uploaded "dropped" itself and reported it.
	repMust(t, r.Drop("node-a", "bkt", "dropped", repVersion("", "", objs["dropped"], past).ETag))
	repWantPrimaries(t, r, map[string]int{"node-a": 3, "node-b": 1})

	n, err := r.TakeOver(repCtx(t), "node-a")
	if err != nil || n != 3 {
		t.Fatalf("TakeOver = %d, %v; want 3, nil", n, err)
	}
	for _, key := range []string{"a/big", "a/small", "a/empty"} {
		info := repOriginHas(t, o, key, objs[key])
		if info.ContentType != "application/x-test" || info.User["writer"] != key {
			t.Errorf("%s: metadata %+v not preserved", key, info.ObjectMeta)
		}
	}
	if _, err := o.Stat(repCtx(t), "bkt", "dropped"); !errors.Is(err, store.ErrNoSuchKey) {
		t.Errorf("dropped copy reached the origin: %v", err)
	}
	repWantPrimaries(t, r, map[string]int{"node-b": 1})
	if files := repDataFiles(t, dir); len(files) != 1 {
		t.Errorf("data files after takeover: %v, want node-b's only", files)
	}
	// A second takeover finds nothing left.
	if n, err := r.TakeOver(repCtx(t), "node-a"); n != 0 || err != nil {
		t.Errorf("second TakeOver = %d, %v", n, err)
	}
}

func TestCopiesDropOlderKeepsNewer(t *testing.T) {
	o := repFSOrigin(t)
	dir := t.TempDir()
	r := repOpen(t, dir, o)
	v1, v2 := []byte("repVersion one"), []byte("repVersion two!")
	i1, i2 := repVersion("bkt", "k", v1, time.Now()), repVersion("bkt", "k", v2, time.Now())
	repPut(t, r, "p", i1, v1)
	repPut(t, r, "p", i2, v2)
	repMust(t, r.Drop("p", "bkt", "k", i1.ETag))
	repWantPrimaries(t, r, map[string]int{"p": 1})
	// Unknown primaries and keys are no error.
	repMust(t, r.Drop("nobody", "bkt", "k", i2.ETag))
	repMust(t, r.Drop("p", "bkt", "other", i2.ETag))
	if n, err := r.TakeOver(repCtx(t), "p"); n != 1 || err != nil {
		t.Fatalf("TakeOver = %d, %v", n, err)
	}
	repOriginHas(t, o, "k", v2)
	if files := repDataFiles(t, dir); len(files) != 0 {
		t.Errorf("data files left: %v", files)
	}
}

func TestCopiesReplaceKeepsOneCopy(t *testing.T) {
	dir := t.TempDir()
	r := repOpen(t, dir, repFSOrigin(t))
	var last store.ObjectInfo
	for i := range 5 {
		data := repBytes(1000+i, uint64(i))
		last = repVersion("bkt", "k", data, time.Now())
		repPut(t, r, "p", last, data)
	}
	repWantPrimaries(t, r, map[string]int{"p": 1})
	if files := repDataFiles(t, dir); len(files) != 1 {
		t.Fatalf("data files: %v, want 1", files)
	}
	recs, err := r.list("p")
	if err != nil || len(recs) != 1 || recs[0].ETag != last.ETag || recs[0].Size != last.Size {
		t.Fatalf("records %+v, %v; want the last repVersion %s", recs, err, last.ETag)
	}
}

func TestCopiesBodyLengthChecked(t *testing.T) {
	dir := t.TempDir()
	r := repOpen(t, dir, repFSOrigin(t))
	good := []byte("the good copy")
	repPut(t, r, "p", repVersion("bkt", "k", good, time.Now()), good)
	data := []byte("0123456789")
	info := repVersion("bkt", "k", data, time.Now())
	for _, tc := range []struct {
		name string
		body []byte
		want error
	}{
		{"short", data[:9], store.ErrIncompleteBody},
		{"empty", nil, store.ErrIncompleteBody},
		{"long", append(slices.Clone(data), 'x'), errLongBody},
	} {
		err := r.Put(repCtx(t), "p", info, bytes.NewReader(tc.body))
		if !errors.Is(err, tc.want) {
			t.Errorf("%s body: err %v, want %v", tc.name, err, tc.want)
		}
		// The new key is not kept and the copy it would replace is intact.
		err = r.Put(repCtx(t), "p", repVersion("bkt", "new", data, time.Now()), bytes.NewReader(tc.body))
		if !errors.Is(err, tc.want) {
			t.Errorf("%s body, new key: err %v, want %v", tc.name, err, tc.want)
		}
	}
	repWantPrimaries(t, r, map[string]int{"p": 1})
	if files := repDataFiles(t, dir); len(files) != 1 {
		t.Errorf("data files: %v, want the good copy's only", files)
	}
	if n, err := r.TakeOver(repCtx(t), "p"); n != 1 || err != nil {
		t.Fatalf("TakeOver = %d, %v", n, err)
	}
	repOriginHas(t, r.origin, "k", good)
}

// repCancellingReader returns its first chunk, then cancels its context, then
// would return more.
type repCancellingReader struct {
	cancel context.CancelFunc
	reads  int
}

func (c *repCancellingReader) Read(p []byte) (int, error) {
	c.reads++
	if c.reads == 2 {
		c.cancel()
	}
	n := min(len(p), 4096)
	clear(p[:n])
	return n, nil
}

func TestCopiesCancelMidBody(t *testing.T) {
	dir := t.TempDir()
	r := repOpen(t, dir, repFSOrigin(t))
	old := []byte("old copy")
	repPut(t, r, "p", repVersion("bkt", "k", old, time.Now()), old)
	for _, key := range []string{"k", "fresh"} {
		ctx, cancel := context.WithCancel(repCtx(t))
		body := &repCancellingReader{cancel: cancel}
		err := r.Put(ctx, "p", store.ObjectInfo{Bucket: "bkt", Key: key, Size: 1 << 20, ETag: "e"}, body)
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Put %s: err %v, want context.Canceled", key, err)
		}
		if body.reads > 3 {
			t.Errorf("Put %s read %d times after the cancel", key, body.reads)
		}
	}
	repWantPrimaries(t, r, map[string]int{"p": 1})
	if files := repDataFiles(t, dir); len(files) != 1 {
		t.Errorf("data files: %v, want the old copy's only", files)
	}
	if n, err := r.TakeOver(repCtx(t), "p"); n != 1 || err != nil {
		t.Fatalf("TakeOver = %d, %v", n, err)
	}
	repOriginHas(t, r.origin, "k", old)
}

func TestCopiesReopenAfterCrash(t *testing.T) {
	o := repFSOrigin(t)
	dir := t.TempDir()
	r, err := Open(dir, o, zerolog.Nop())
	repMust(t, err)
	keep := map[string][]byte{"one": repBytes(5000, 1), "two": repBytes(7, 2)}
	for k, data := range keep {
		repPut(t, r, "p", repVersion("bkt", k, data, time.Now()), data)
	}
	truncated := repBytes(300, 3)
	repPut(t, r, "p", repVersion("bkt", "truncated", truncated, time.Now()), truncated)
	recs, err := r.list("p")
	repMust(t, err)
	// What a crash can leave: a temp file of a Put in progress, a data
	// file renamed but never recorded, a record whose file is gone; and
	// damage no crash should cause: a file shorter than its record.
	data := filepath.Join(dir, dataDirName)
	repMust(t, os.WriteFile(filepath.Join(data, "put-123.tmp"), []byte("partial"), 0o644))
	repMust(t, os.WriteFile(filepath.Join(data, "unrecorded"), []byte("never acked"), 0o644))
	for _, rec := range recs {
		if rec.Key == "truncated" {
			repMust(t, os.Truncate(filepath.Join(data, rec.File), 10))
		}
	}
	ghost, _ := json.Marshal(copyRecord{Primary: "q", Bucket: "bkt", Key: "ghost", Size: 3, File: "missing"})
	repMust(t, r.db.Update(func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("q"))
		if err != nil {
			return err
		}
		return b.Put(indexKey("bkt", "ghost"), ghost)
	}))
	repMust(t, r.Close())

	r = repOpen(t, dir, o)
	repWantPrimaries(t, r, map[string]int{"p": 2})
	if files := repDataFiles(t, dir); len(files) != 2 {
		t.Errorf("data files after recovery: %v, want the two complete copies", files)
	}
	if n, err := r.TakeOver(repCtx(t), "p"); n != 2 || err != nil {
		t.Fatalf("TakeOver = %d, %v", n, err)
	}
	for k, data := range keep {
		repOriginHas(t, o, k, data)
	}
}

func repMust(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestCopiesTakeOverDecisions(t *testing.T) {
	o := repFSOrigin(t)
	r := repOpen(t, t.TempDir(), o)
	ctx := repCtx(t)
	atOrigin := func(key string, data []byte) store.ObjectInfo {
		info, err := o.Put(ctx, "bkt", key, bytes.NewReader(data), int64(len(data)), store.ObjectMeta{})
		repMust(t, err)
		return info
	}
	// same: the origin holds the copy's ETag. The copy's bytes differ
	// from the origin's, so an upload would show.
	same := atOrigin("same", []byte("at origin"))
	copySame := repVersion("bkt", "same", []byte("copy bytes"), same.LastModified)
	copySame.ETag = same.ETag
	repPut(t, r, "p", copySame, []byte("copy bytes"))
	// newer: written at the origin after the copy's LastModified.
	stale := []byte("stale copy")
	repPut(t, r, "p", repVersion("bkt", "newer", stale, time.Now().Add(-time.Minute)), stale)
	atOrigin("newer", []byte("newer write"))
	// older: the origin's object predates the copy.
	old := atOrigin("older", []byte("old write"))
	fresh := []byte("fresh copy")
	repPut(t, r, "p", repVersion("bkt", "older", fresh, old.LastModified.Add(time.Second)), fresh)
	// missing: the origin has nothing.
	lost := []byte("only here")
	repPut(t, r, "p", repVersion("bkt", "missing", lost, time.Now()), lost)

	n, err := r.TakeOver(ctx, "p")
	if n != 2 || err != nil {
		t.Fatalf("TakeOver = %d, %v; want 2 uploads", n, err)
	}
	repOriginHas(t, o, "same", []byte("at origin"))
	repOriginHas(t, o, "newer", []byte("newer write"))
	repOriginHas(t, o, "older", fresh)
	repOriginHas(t, o, "missing", lost)
	repWantPrimaries(t, r, map[string]int{})
}

func TestCopiesTakeOverFailureKeepsCopy(t *testing.T) {
	o := repFSOrigin(t)
	r := repOpen(t, t.TempDir(), o)
	ctx := repCtx(t)
	good, orphan := []byte("bucket exists"), []byte("bucket missing")
	repPut(t, r, "p", repVersion("bkt", "k", good, time.Now()), good)
	repPut(t, r, "p", repVersion("later", "k", orphan, time.Now()), orphan)
	n, err := r.TakeOver(ctx, "p")
	if n != 1 || !errors.Is(err, store.ErrNoSuchBucket) {
		t.Fatalf("TakeOver = %d, %v; want 1 and ErrNoSuchBucket", n, err)
	}
	repWantPrimaries(t, r, map[string]int{"p": 1})
	repMust(t, o.MakeBucket(ctx, "later"))
	if n, err := r.TakeOver(ctx, "p"); n != 1 || err != nil {
		t.Fatalf("retry TakeOver = %d, %v", n, err)
	}
	repWantPrimaries(t, r, map[string]int{})
}

func TestCopiesTakeOverDeadMinIO(t *testing.T) {
	srv, err := miniotest.Start()
	repMust(t, err)
	defer srv.Stop()
	dir := t.TempDir()
	r, err := Open(dir, repS3Origin(t, srv), zerolog.Nop())
	repMust(t, err)
	data := repBytes(64<<10, 9)
	repPut(t, r, "p", repVersion("bkt", "k", data, time.Now()), data)
	srv.Stop()
	start := time.Now()
	n, err := r.TakeOver(repCtx(t), "p")
	if n != 0 || !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("TakeOver against a dead origin = %d, %v; want 0, ErrUnavailable", n, err)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("TakeOver against a dead origin took %v", took)
	}
	repWantPrimaries(t, r, map[string]int{"p": 1})
	repMust(t, r.Close())
	// The copy survives a restart and reaches the origin once one answers.
	o := repS3Origin(t, miniotest.StartT(t))
	r = repOpen(t, dir, o)
	if n, err := r.TakeOver(repCtx(t), "p"); n != 1 || err != nil {
		t.Fatalf("TakeOver after restart = %d, %v", n, err)
	}
	repOriginHas(t, o, "k", data)
}

func TestCopiesConcurrentPuts(t *testing.T) {
	o := repFSOrigin(t)
	for _, b := range []string{"node-0", "node-1"} {
		repMust(t, o.MakeBucket(repCtx(t), b))
	}
	dir := t.TempDir()
	r := repOpen(t, dir, o)
	const workers, perWorker, keys = 8, 25, 10
	var wg sync.WaitGroup
	errs := make(chan error, workers*perWorker)
	for w := range workers {
		wg.Go(func() {
			primary := fmt.Sprintf("node-%d", w%2)
			for i := range perWorker {
				// Workers of one primary collide on its keys.
				key := fmt.Sprintf("k%d", (w+i)%keys)
				data := repBytes(100+w*perWorker+i, uint64(w*1000+i))
				if err := r.Put(t.Context(), primary, repVersion(primary, key, data, time.Now()), bytes.NewReader(data)); err != nil {
					errs <- err
				}
				if i%5 == 0 {
					r.Primaries()
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	repWantPrimaries(t, r, map[string]int{"node-0": keys, "node-1": keys})
	if files := repDataFiles(t, dir); len(files) != 2*keys {
		t.Fatalf("%d data files, want %d", len(files), 2*keys)
	}
	for _, p := range []string{"node-0", "node-1"} {
		recs, err := r.list(p)
		repMust(t, err)
		if n, err := r.TakeOver(repCtx(t), p); n != keys || err != nil {
			t.Fatalf("TakeOver %s = %d, %v", p, n, err)
		}
		// Each upload's bytes are the ones its record describes (the
		// directory origin's ETag is their MD5). Each primary writes to
		// its own bucket, so neither takeover sees the other's objects.
		for _, rec := range recs {
			info, err := o.Stat(repCtx(t), rec.Bucket, rec.Key)
			if err != nil || info.ETag != rec.ETag {
				t.Errorf("%s %s: origin %+v, %v; copy ETag %s", p, rec.Key, info, err, rec.ETag)
			}
		}
	}
}

// A live primary is asked about its old copies: those it still waits to
// upload stay, the others are settled as a takeover would (uploaded when
// the origin lacks them); young copies are not asked about; a primary that
// does not answer stops the round with nothing changed.
func TestCopiesReconcileWithLivePrimary(t *testing.T) {
	o := repFSOrigin(t)
	r := repOpen(t, t.TempDir(), o)
	ctx := repCtx(t)
	now := time.Now()
	old := now.Add(-time.Hour)
	lost, held, young := []byte("lost by its primary"), []byte("still held"), []byte("just written")
	repPut(t, r, "p", repVersion("bkt", "lost", lost, old), lost)
	repPut(t, r, "p", repVersion("bkt", "held", held, old), held)
	repPut(t, r, "p", repVersion("bkt", "young", young, now), young)
	asked := map[string]int{}
	down := errors.New("primary unreachable")
	n, err := r.Reconcile(ctx, "p", now.Add(-time.Minute), func(_ context.Context, bucket, key string) (bool, error) {
		asked[key]++
		return false, down
	})
	if n != 0 || !errors.Is(err, down) || len(asked) != 1 {
		t.Fatalf("with the primary silent: %d uploads, %v, asked %v; want none, its error, one question", n, err, asked)
	}
	repWantPrimaries(t, r, map[string]int{"p": 3})
	clear(asked)
	n, err = r.Reconcile(ctx, "p", now.Add(-time.Minute), func(_ context.Context, bucket, key string) (bool, error) {
		asked[key]++
		return key == "held", nil
	})
	if n != 1 || err != nil {
		t.Fatalf("Reconcile = %d, %v; want the lost copy uploaded", n, err)
	}
	if asked["young"] != 0 || asked["lost"] != 1 || asked["held"] != 1 {
		t.Fatalf("asked %v; want lost and held once, young never", asked)
	}
	repOriginHas(t, o, "lost", lost)
	if _, err := o.Stat(ctx, "bkt", "held"); !errors.Is(err, store.ErrNoSuchKey) {
		t.Fatalf("a copy its primary still holds reached the origin: %v", err)
	}
	repWantPrimaries(t, r, map[string]int{"p": 2})
}

// Two copies of one key arriving out of order: the newer (by the
// primary's clock) is kept, whichever came last, and a takeover uploads
// it.
func TestCopiesOutOfOrderKeepsTheNewer(t *testing.T) {
	o := repFSOrigin(t)
	dir := t.TempDir()
	r := repOpen(t, dir, o)
	older, newer := []byte("written first"), []byte("written second")
	at := time.Now()
	repPut(t, r, "p", repVersion("bkt", "k", newer, at), newer)
	repPut(t, r, "p", repVersion("bkt", "k", older, at.Add(-time.Millisecond)), older)
	if files := repDataFiles(t, dir); len(files) != 1 {
		t.Fatalf("data files %v: the older copy's file was kept", files)
	}
	if n, err := r.TakeOver(repCtx(t), "p"); n != 1 || err != nil {
		t.Fatalf("TakeOver = %d, %v", n, err)
	}
	repOriginHas(t, o, "k", newer)
}
