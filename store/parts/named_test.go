// Tests of parts named rather than hashed (a tee's): named by the ETag
// given, dropped when refused a name, and a single PUT's one part read
// back whole; refused when missing or short.
package parts

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/granary-dev/granary/store"
)

// unnamed names a single PUT's part: no ETag.
func unnamed() (string, bool) { return "", true }

func TestPutWholeAndAssemble(t *testing.T) {
	s := openStore(t, t.TempDir(), true)
	id := newUpload(t, s, "whole")
	if _, err := s.AssembleWhole("bkt", "whole", id); !errors.Is(err, store.ErrInvalidPart) {
		t.Fatalf("AssembleWhole before PutWhole: %v, want ErrInvalidPart", err)
	}
	data := randBytes(3, 3<<20+17)
	if err := s.PutPartNamed(context.Background(), "bkt", "whole", id, 1, bytes.NewReader(data), int64(len(data)), unnamed); err != nil {
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
	err := s.PutPartNamed(context.Background(), "bkt", "short", id, 1, bytes.NewReader(data[:1000]), int64(len(data)), unnamed)
	if !errors.Is(err, store.ErrIncompleteBody) {
		t.Fatalf("PutWhole of a short body: %v, want ErrIncompleteBody", err)
	}
	if _, err := s.AssembleWhole("bkt", "short", id); !errors.Is(err, store.ErrInvalidPart) {
		t.Fatalf("AssembleWhole after a short body: %v, want ErrInvalidPart", err)
	}
}

func TestPartsNamedByTheOrigin(t *testing.T) {
	s := openStore(t, t.TempDir(), true)
	id := newUpload(t, s, "named")
	ctx := context.Background()
	p1, p2 := randBytes(5, store.MinPartSize), randBytes(6, 1000)
	for n, p := range [][]byte{p1, p2} {
		etag := `"` + md5Hex(p) + `"` // as an origin answers it, quoted
		name := func() (string, bool) { return etag, true }
		if err := s.PutPartNamed(ctx, "bkt", "named", id, n+1, bytes.NewReader(p), int64(len(p)), name); err != nil {
			t.Fatal(err)
		}
	}
	// A part whose origin upload failed is dropped: part 2 stays as it was.
	refused := func() (string, bool) { return "", false }
	if err := s.PutPartNamed(ctx, "bkt", "named", id, 2, bytes.NewReader(p1), int64(len(p1)), refused); err == nil {
		t.Fatal("a part refused its name was kept")
	}
	page, err := s.ListParts("bkt", "named", id, store.PartListOptions{})
	if err != nil || len(page.Parts) != 2 || page.Parts[0].ETag != md5Hex(p1) || page.Parts[1].ETag != md5Hex(p2) || page.Parts[1].Size != 1000 {
		t.Fatalf("parts %+v, %v; want the two named by their ETags", page.Parts, err)
	}
	a, err := s.Assemble("bkt", "named", id, []store.CompletePart{{Number: 1, ETag: md5Hex(p1)}, {Number: 2, ETag: md5Hex(p2)}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Remove()
	want, _ := store.MultipartETag([]string{md5Hex(p1), md5Hex(p2)})
	if a.ETag != want || a.Size != int64(len(p1)+len(p2)) {
		t.Fatalf("assembled ETag %q, %d bytes; want %q, %d", a.ETag, a.Size, want, len(p1)+len(p2))
	}
}
