// Tests of whole uploads (a single PUT's tee): kept unhashed, read back
// whole, refused when missing or short.
package parts

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/granary-dev/granary/store"
)

func TestPutWholeAndAssemble(t *testing.T) {
	s := openStore(t, t.TempDir(), true)
	id := newUpload(t, s, "whole")
	if _, err := s.AssembleWhole("bkt", "whole", id); !errors.Is(err, store.ErrInvalidPart) {
		t.Fatalf("AssembleWhole before PutWhole: %v, want ErrInvalidPart", err)
	}
	data := randBytes(3, 3<<20+17)
	if err := s.PutWhole(context.Background(), "bkt", "whole", id, bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatal(err)
	}
	page, err := s.ListParts("bkt", "whole", id, store.PartListOptions{})
	if err != nil || len(page.Parts) != 1 || page.Parts[0].ETag != "" || page.Parts[0].Size != int64(len(data)) {
		t.Fatalf("parts %+v, %v; want one of %d bytes without an ETag", page.Parts, err, len(data))
	}
	a, err := s.AssembleWhole("bkt", "whole", id)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Remove()
	if a.Size != int64(len(data)) || a.ETag != "" {
		t.Fatalf("assembled %d bytes, ETag %q; want %d, none", a.Size, a.ETag, len(data))
	}
	rc, err := a.Open(1<<20, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || !bytes.Equal(got, data[1<<20:2<<20]) {
		t.Fatalf("read back %d bytes (%v), not the part's", len(got), err)
	}
}

func TestPutWholeShortBodyKeepsNothing(t *testing.T) {
	s := openStore(t, t.TempDir(), true)
	id := newUpload(t, s, "short")
	data := randBytes(4, 1<<20)
	err := s.PutWhole(context.Background(), "bkt", "short", id, bytes.NewReader(data[:1000]), int64(len(data)))
	if !errors.Is(err, store.ErrIncompleteBody) {
		t.Fatalf("PutWhole of a short body: %v, want ErrIncompleteBody", err)
	}
	if _, err := s.AssembleWhole("bkt", "short", id); !errors.Is(err, store.ErrInvalidPart) {
		t.Fatalf("AssembleWhole after a short body: %v, want ErrInvalidPart", err)
	}
}
