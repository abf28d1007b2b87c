// The multipart suite's part-range case: where each part of a completed
// upload lies (GET/HEAD with partNumber).
package storetest

import (
	"errors"
	"testing"

	"github.com/granary-dev/granary/store"
)

// mpPartRanges: an origin that locates parts (store.PartLocator) finds
// each part of a completed upload, and an object written whole is one
// part.
func mpPartRanges(t *testing.T, o store.Origin, mp store.Multipart) {
	pl, ok := o.(store.PartLocator)
	if !ok {
		t.Skip("origin does not implement store.PartLocator")
	}
	ctx := opCtx(t)
	b := newBucket(t, o)
	d1, d2 := randomBytes(5*mib, 21), randomBytes(1000, 22)
	id := mpNew(t, mp, b, "mp", store.ObjectMeta{})
	mpComplete(t, mp, b, "mp", id, mpPut(t, mp, b, "mp", id, 1, d1), mpPut(t, mp, b, "mp", id, 2, d2))
	for n, want := range [][3]int64{{0, int64(len(d1)), 2}, {int64(len(d1)), int64(len(d2)), 2}} {
		off, length, parts, err := pl.PartRange(ctx, b, "mp", n+1)
		if errors.Is(err, store.ErrNotSupported) {
			if _, staging := o.(store.Stager); staging {
				return // a write-back log cannot locate the parts of what it still holds
			}
		}
		if err != nil || off != want[0] || length != want[1] || int64(parts) != want[2] {
			t.Fatalf("PartRange(%d) = %d, %d, %d, %v; want %v", n+1, off, length, parts, err, want)
		}
	}
	if _, _, _, err := pl.PartRange(ctx, b, "mp", 3); !errors.Is(err, store.ErrInvalidPart) {
		t.Fatalf("PartRange(3) of 2 parts = %v, want ErrInvalidPart", err)
	}
	putBytes(t, o, b, "whole", []byte("whole"), store.ObjectMeta{})
	if off, length, parts, err := pl.PartRange(ctx, b, "whole", 1); err != nil || off != 0 || length != 5 || parts != 1 {
		t.Fatalf("PartRange(1) of a whole object = %d, %d, %d, %v", off, length, parts, err)
	}
	if _, _, _, err := pl.PartRange(ctx, b, "whole", 2); !errors.Is(err, store.ErrInvalidPart) {
		t.Fatalf("PartRange(2) of a whole object = %v, want ErrInvalidPart", err)
	}
}
