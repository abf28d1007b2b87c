// The dirty limit: writes are accepted while the origin is down until the
// limit, then refused with ErrSlowDown; the accounting returns to zero
// after uploads, aborts and failed writes.
package writeback

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/granary-dev/granary/store"
)

func TestOriginDownThenBack(t *testing.T) {
	raw := s3Origin(t)
	b := newBucket(t, raw)
	g := newGate(raw, true)
	g.SetDown(fmt.Errorf("gate: %w", store.ErrUnavailable))
	const limit, size = 1 << 20, 100 << 10
	l := openLog(t, Options{Origin: g, WriteBack: always, DirtyLimit: limit})
	ctx := testCtx(t)
	var written [][]byte
	for i := 0; ; i++ {
		data := payload(size, uint64(i))
		_, err := l.Put(ctx, b, fmt.Sprintf("o-%02d", i), bytes.NewReader(data), size, store.ObjectMeta{})
		if errors.Is(err, store.ErrSlowDown) {
			break
		}
		if err != nil {
			t.Fatalf("Put %d with the origin down: %v", i, err)
		}
		written = append(written, data)
		if i > 20 {
			t.Fatal("no ErrSlowDown past the dirty limit")
		}
	}
	if len(written) != limit/size {
		t.Fatalf("%d puts accepted, want %d (the limit)", len(written), limit/size)
	}
	if st := l.Stats(); st.DirtyBytes != int64(len(written)*size) || st.DirtyObjects != len(written) {
		t.Fatalf("Stats at the limit = %+v", st)
	}
	// An unknown size is refused as its bytes arrive, a part before.
	if _, err := l.Put(ctx, b, "unknown", bytes.NewReader(payload(size, 99)), -1, store.ObjectMeta{}); !errors.Is(err, store.ErrSlowDown) {
		t.Fatalf("Put(size -1) past the limit = %v, want ErrSlowDown", err)
	}
	id, err := l.NewUpload(ctx, b, "mp", store.ObjectMeta{})
	if err != nil {
		t.Fatal(err)
	}
	body := &countingReader{r: bytes.NewReader(payload(size, 98))}
	if _, err := l.PutPart(ctx, b, "mp", id, 1, body, size); !errors.Is(err, store.ErrSlowDown) || body.n != 0 {
		t.Fatalf("PutPart past the limit = %v after reading %d bytes, want ErrSlowDown before reading", err, body.n)
	}
	if err := l.AbortUpload(ctx, b, "mp", id); err != nil {
		t.Fatal(err)
	}
	if st := l.Stats(); st.DirtyBytes != int64(len(written)*size) {
		t.Fatalf("refused writes changed the dirty bytes: %+v", st)
	}

	g.SetDown(nil)
	flush(t, l, b)
	for i, data := range written {
		wantData(t, raw, b, fmt.Sprintf("o-%02d", i), data)
	}
	if st := l.Stats(); st != (Stats{}) {
		t.Fatalf("Stats after the origin came back = %+v", st)
	}
	failed, retries := testutil.ToFloat64(l.m.uploads.WithLabelValues("failed")), testutil.ToFloat64(l.m.retries)
	if failed < 1 || retries < 1 {
		t.Fatalf("metrics: %v failed attempts, %v retries; want some of each", failed, retries)
	}
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// failingBody yields n bytes, then fails.
type failingBody struct{ n int }

func (f *failingBody) Read(p []byte) (int, error) {
	if f.n == 0 {
		return 0, errors.New("body broke")
	}
	k := min(len(p), f.n)
	f.n -= k
	return k, nil
}

func TestDirtyAccounting(t *testing.T) {
	raw := s3Origin(t)
	b := newBucket(t, raw)
	g := newGate(raw, false)
	l := openLog(t, Options{Origin: g, WriteBack: always})
	ctx := testCtx(t)
	wantDirty := func(what string, n int64) {
		t.Helper()
		if st := l.Stats(); st.DirtyBytes != n {
			t.Fatalf("%s: %d dirty bytes, want %d", what, st.DirtyBytes, n)
		}
	}
	part := func(id string, n, size int, seed uint64) store.PartInfo {
		t.Helper()
		p, err := l.PutPart(ctx, b, "mp", id, n, bytes.NewReader(payload(size, seed)), int64(size))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}

	// Failed puts leave nothing counted.
	if _, err := l.Put(ctx, b, "k", bytes.NewReader(make([]byte, 10)), 100, store.ObjectMeta{}); !errors.Is(err, store.ErrIncompleteBody) {
		t.Fatalf("short Put = %v", err)
	}
	if _, err := l.Put(ctx, b, "k", &failingBody{n: 3 << 20}, -1, store.ObjectMeta{}); err == nil {
		t.Fatal("Put of a failing body succeeded")
	}
	if _, err := l.Put(ctx, b, "k", &failingBody{n: 1000}, 5000, store.ObjectMeta{}); err == nil {
		t.Fatal("Put of a failing body succeeded")
	}
	wantDirty("after failed puts", 0)

	// An aborted upload: parts counted, a replaced part once, a failed
	// part not at all; nothing after the abort.
	id, err := l.NewUpload(ctx, b, "mp", store.ObjectMeta{})
	if err != nil {
		t.Fatal(err)
	}
	part(id, 1, 5<<20, 1)
	part(id, 1, 6<<20, 2)
	part(id, 2, 100, 3)
	if _, err := l.PutPart(ctx, b, "mp", id, 3, bytes.NewReader(make([]byte, 10)), 20); !errors.Is(err, store.ErrIncompleteBody) {
		t.Fatalf("short PutPart = %v", err)
	}
	wantDirty("open upload", 6<<20+100)
	if err := l.AbortUpload(ctx, b, "mp", id); err != nil {
		t.Fatal(err)
	}
	wantDirty("after the abort", 0)

	// A completed upload: only the listed parts stay dirty, until they
	// are at the origin.
	id, err = l.NewUpload(ctx, b, "mp", store.ObjectMeta{})
	if err != nil {
		t.Fatal(err)
	}
	p1, p2 := part(id, 1, 5<<20, 4), part(id, 2, 10, 5)
	part(id, 3, 20, 6)
	if _, err := l.CompleteUpload(ctx, b, "mp", id, []store.CompletePart{{Number: 1, ETag: p1.ETag}, {Number: 2, ETag: p2.ETag}}); err != nil {
		t.Fatal(err)
	}
	wantDirty("completed upload", 5<<20+10)
	put(t, l, b, "small", []byte("12345"))
	wantDirty("and a put", 5<<20+15)
	g.Open()
	flush(t, l, b)
	wantDirty("after the flush", 0)
	wantData(t, raw, b, "mp", append(payload(5<<20, 4), payload(10, 5)...))
}
