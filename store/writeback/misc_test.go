// Copies, bucket removal, a reader outliving its staged object, and
// Close leaving no goroutine behind.
package writeback

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/granary-dev/granary/internal/goroutines"
	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/origin/fs"
)

func TestCopyPendingSource(t *testing.T) {
	raw := s3Origin(t)
	wbBucket, ptBucket := newBucket(t, raw), newBucket(t, raw)
	g := newGate(raw, false)
	l := openLog(t, Options{Origin: g, WriteBack: func(b string) bool { return b == wbBucket }})
	ctx := testCtx(t)
	data := payload(50000, 7)
	meta := store.ObjectMeta{ContentType: "text/csv", User: map[string]string{"k": "v"}}
	if _, err := l.Put(ctx, wbBucket, "src", bytes.NewReader(data), int64(len(data)), meta); err != nil {
		t.Fatal(err)
	}
	// Into a pass-through bucket: the staged bytes go to the origin now.
	info, err := l.Copy(directCtx(ctx), wbBucket, "src", ptBucket, "dst", nil)
	if err != nil {
		t.Fatal(err)
	}
	if oi := wantData(t, raw, ptBucket, "dst", data); oi.ETag != info.ETag || oi.ContentType != "text/csv" || oi.User["k"] != "v" {
		t.Fatalf("copy at the origin: %+v", oi)
	}
	// Within the write-back bucket, with new metadata: staged.
	newMeta := store.ObjectMeta{ContentType: "application/json"}
	if _, err := l.Copy(ctx, wbBucket, "src", wbBucket, "dst2", &newMeta); err != nil {
		t.Fatal(err)
	}
	if st, err := l.Stat(ctx, wbBucket, "dst2"); err != nil || st.ContentType != "application/json" || st.Size != int64(len(data)) {
		t.Fatalf("Stat(copy) = %+v, %v", st, err)
	}
	wantMissing(t, raw, wbBucket, "dst2")
	// Source and destination at the origin, pass-through: the origin copies.
	put(t, raw, ptBucket, "plain", []byte("plain"))
	if _, err := l.Copy(directCtx(ctx), ptBucket, "plain", ptBucket, "plain2", nil); err != nil {
		t.Fatal(err)
	}
	wantData(t, raw, ptBucket, "plain2", []byte("plain"))
	g.Open()
	flush(t, l, "")
	wantData(t, raw, wbBucket, "dst2", data)
}

func TestRemoveBucketWithPendingWrites(t *testing.T) {
	raw := s3Origin(t)
	b := newBucket(t, raw)
	g := newGate(raw, false)
	l := openLog(t, Options{Origin: g, WriteBack: always})
	put(t, l, b, "k", []byte("pending"))
	if err := l.RemoveBucket(testCtx(t), b); !errors.Is(err, store.ErrBucketNotEmpty) {
		t.Fatalf("RemoveBucket with a pending put = %v, want ErrBucketNotEmpty", err)
	}
	if err := l.Delete(testCtx(t), b, "k"); err != nil {
		t.Fatal(err)
	}
	g.Open()
	// Only a pending delete: flushed, then the bucket goes.
	if err := l.RemoveBucket(testCtx(t), b); err != nil {
		t.Fatalf("RemoveBucket with a pending delete = %v", err)
	}
	if err := raw.StatBucket(testCtx(t), b); !errors.Is(err, store.ErrNoSuchBucket) {
		t.Fatalf("bucket still at the origin: %v", err)
	}
}

// TestReaderOutlivesUpload reads a staged object while it lands and is
// superseded: the reader's bytes stay whole.
func TestReaderOutlivesUpload(t *testing.T) {
	raw := s3Origin(t)
	b := newBucket(t, raw)
	g := newGate(raw, false)
	l := openLog(t, Options{Origin: g, WriteBack: always})
	// Two parts: the reader opens the second part's file only when it
	// gets there, long after the object landed.
	p1, p2 := payload(5<<20, 8), payload(1000, 9)
	ctx := testCtx(t)
	id, err := l.NewUpload(ctx, b, "k", store.ObjectMeta{})
	if err != nil {
		t.Fatal(err)
	}
	pi1, err1 := l.PutPart(ctx, b, "k", id, 1, bytes.NewReader(p1), int64(len(p1)))
	pi2, err2 := l.PutPart(ctx, b, "k", id, 2, bytes.NewReader(p2), int64(len(p2)))
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	if _, err := l.CompleteUpload(ctx, b, "k", id, []store.CompletePart{{Number: 1, ETag: pi1.ETag}, {Number: 2, ETag: pi2.ETag}}); err != nil {
		t.Fatal(err)
	}
	data := append(p1, p2...)
	rc, _, err := l.Get(testCtx(t), b, "k", store.ReadRange{Length: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	head := make([]byte, 1000)
	if _, err := io.ReadFull(rc, head); err != nil {
		t.Fatal(err)
	}
	g.Open()
	flush(t, l, b)
	put(t, l, b, "k", []byte("newer"))
	flush(t, l, b)
	rest, err := io.ReadAll(rc)
	if err != nil || !bytes.Equal(append(head, rest...), data) {
		t.Fatalf("reader across the upload: %d bytes, %v", len(head)+len(rest), err)
	}
	rc.Close()
	if sealed := append(l.stage.Sealed(), l.puts.Sealed()...); len(sealed) != 0 {
		t.Fatalf("staged objects left after the last reader closed: %v", sealed)
	}
}

func TestCloseLeavesNoGoroutines(t *testing.T) {
	root := t.TempDir()
	o, err := fs.New(fs.Options{Root: root, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	ctx := testCtx(t)
	if err := o.MakeBucket(ctx, "bucket"); err != nil {
		t.Fatal(err)
	}
	base := goroutines.Snapshot()
	g := newGate(o, false)
	l, err := Open(Options{Origin: g, Dir: t.TempDir(), WriteBack: always, RetryMin: time.Millisecond, RetryMax: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	l.Start()
	for _, k := range []string{"a", "b", "c", "d", "e", "f"} {
		put(t, l, "bucket", k, []byte(k))
	}
	g.awaitAttempt(t, "a")
	fctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	l.Flush(fctx, "bucket", "", nil)
	cancel()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := goroutines.Leaked(base, 5*time.Second); err != nil {
		t.Fatalf("after Close: %v", err)
	}
	if _, err := l.Put(ctx, "bucket", "late", bytes.NewReader(nil), 0, store.ObjectMeta{}); !errors.Is(err, errClosed) {
		t.Fatalf("Put after Close = %v", err)
	}
}
