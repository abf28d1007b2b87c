// Where the parts of an object lie while it is staged in the log (from the
// part sizes its completion recorded) and once it is at the origin.
package writeback

import (
	"bytes"
	"errors"
	"testing"

	"github.com/granary-dev/granary/store"
)

// partsGate is a gate over an origin that locates parts.
type partsGate struct {
	*gate
	store.PartLocator
}

func TestPartRangeStagedAndFlushed(t *testing.T) {
	raw := s3Origin(t)
	g := newGate(raw, false)
	l := openLog(t, Options{Origin: partsGate{g, raw}, WriteBack: always})
	b := newBucket(t, l)
	ctx := testCtx(t)
	id, err := l.NewUpload(ctx, b, "mp", store.ObjectMeta{})
	if err != nil {
		t.Fatal(err)
	}
	sizes := []int{5 << 20, 5<<20 + 1, 77}
	var list []store.CompletePart
	for i, n := range sizes {
		p, err := l.PutPart(ctx, b, "mp", id, i+1, bytes.NewReader(payload(n, uint64(i))), int64(n))
		if err != nil {
			t.Fatal(err)
		}
		list = append(list, store.CompletePart{Number: i + 1, ETag: p.ETag})
	}
	if _, err := l.CompleteUpload(ctx, b, "mp", id, list); err != nil {
		t.Fatal(err)
	}
	put(t, l, b, "whole", []byte("hello"))
	put(t, l, b, "gone", []byte("x"))
	if err := l.Delete(ctx, b, "gone"); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		off := int64(0)
		for i, n := range sizes {
			o, length, parts, err := l.PartRange(ctx, b, "mp", i+1)
			if err != nil || o != off || length != int64(n) || parts != len(sizes) {
				t.Fatalf("%s: part %d at %d+%d of %d, %v; want %d+%d of %d", when, i+1, o, length, parts, err, off, n, len(sizes))
			}
			off += int64(n)
		}
		if o, length, parts, err := l.PartRange(ctx, b, "whole", 1); err != nil || o != 0 || length != 5 || parts != 1 {
			t.Fatalf("%s: part 1 of an object written whole: %d+%d of %d, %v", when, o, length, parts, err)
		}
		for _, c := range []struct {
			key string
			n   int
		}{{"mp", 4}, {"whole", 2}} {
			if _, _, _, err := l.PartRange(ctx, b, c.key, c.n); !errors.Is(err, store.ErrInvalidPart) {
				t.Fatalf("%s: part %d of %s: %v, want ErrInvalidPart", when, c.n, c.key, err)
			}
		}
		if _, _, _, err := l.PartRange(ctx, b, "gone", 1); !errors.Is(err, store.ErrNoSuchKey) {
			t.Fatalf("%s: part 1 of a deleted object: %v, want ErrNoSuchKey", when, err)
		}
	}
	check("staged")
	g.Open()
	flush(t, l, b)
	if l.pendingOp(b, "mp") != nil {
		t.Fatal("the upload is still staged after the flush")
	}
	check("at the origin")
}
