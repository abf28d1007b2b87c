// Tests of what outlives a Store: sealed uploads, open uploads across a
// restart, and the tidying Open does after a crash.
package parts

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/granary-dev/granary/store"
)

func readAll(t *testing.T, a *Assembly) []byte {
	t.Helper()
	rc, err := a.Open(0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSealAndReopen(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, false)
	id := newUpload(t, s, "k")
	data := fixtureParts(t, s, "k", id)
	openID := newUpload(t, s, "k2")
	p1 := putPart(t, s, "k2", openID, 7, []byte("seven"))
	a, err := s.Assemble("bkt", "k", id, complete(data, 1, 3))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Seal(); err != nil {
		t.Fatal(err)
	}
	model := slices.Concat(data[0], data[2])
	if got := readAll(t, a); !slices.Equal(got, model) {
		t.Fatal("sealed assembly reads other bytes")
	}
	a.Close() // no-op on a sealed assembly
	checkSealedRefused(t, s, id, openID, complete(data, 1, 3))
	page, _ := s.ListUploads("bkt", store.UploadListOptions{})
	if len(page.Uploads) != 1 || page.Uploads[0].UploadID != openID {
		t.Fatalf("ListUploads = %+v, want only the open upload", page.Uploads)
	}
	if sealed, open := s.Sealed(), s.Unsealed(); !slices.Equal(sealed, []string{id}) || !slices.Equal(open, []string{openID}) {
		t.Fatalf("Sealed %v, Unsealed %v; want [%s] and [%s]", sealed, open, id, openID)
	}
	// The unlisted part 2 is gone from disk; only the listed data remains.
	if names := dirNames(t, s, id); len(names) != 4 || !slices.Contains(names, sealName) {
		t.Fatalf("sealed upload dir holds %v", names)
	}

	s.Close()
	if _, err := s.Create("bkt", "k", store.ObjectMeta{}); err == nil {
		t.Fatal("Create on a closed store succeeded")
	}
	s2 := openStore(t, dir, false)
	if got := s2.Sealed(); !slices.Equal(got, []string{id}) {
		t.Fatalf("Sealed after reopen = %v", got)
	}
	b, err := s2.OpenSealed(id)
	if err != nil {
		t.Fatal(err)
	}
	if b.ETag != a.ETag || b.Size != a.Size || !slices.Equal(b.Parts, a.Parts) || b.Key != "k" ||
		b.Meta.ContentType != "text/plain" || b.Meta.User["a"] != "b" {
		t.Fatalf("reopened assembly %+v, sealed %+v", b, a)
	}
	if got := readAll(t, b); !slices.Equal(got, model) {
		t.Fatal("reopened sealed assembly reads other bytes")
	}
	if parts := listAllParts(t, s2, "k2", openID); len(parts) != 1 || parts[0] != p1 {
		t.Fatalf("open upload's parts after reopen = %+v, want %+v", parts, p1)
	}
	if err := s2.Remove(id); err != nil {
		t.Fatal(err)
	}
	if len(s2.Sealed()) != 0 {
		t.Fatalf("Sealed after Remove = %v", s2.Sealed())
	}
	if _, err := b.Open(0, -1); err == nil {
		t.Fatal("Open of a removed sealed upload succeeded")
	}
	if err := b.Remove(); err != nil {
		t.Fatalf("Assembly.Remove of a removed upload = %v", err)
	}
	if err := s2.Remove(id); !errors.Is(err, store.ErrNoSuchUpload) {
		t.Fatalf("second Remove = %v", err)
	}
	// New IDs after a restart still sort after the old ones.
	if nid := newUpload(t, s2, "k"); nid <= openID {
		t.Fatalf("ID %s after restart sorts before %s", nid, openID)
	}
}

// checkSealedRefused checks that sealed upload id is no upload any more to
// PutPart, Abort, Assemble and ListParts, and that open upload openID is
// not sealed.
func checkSealedRefused(t *testing.T, s *Store, id, openID string, list []store.CompletePart) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.PutPart(ctx, "bkt", "k", id, 2, strings.NewReader("x"), 1); !errors.Is(err, store.ErrNoSuchUpload) {
		t.Errorf("PutPart on sealed = %v", err)
	}
	if err := s.Abort("bkt", "k", id); !errors.Is(err, store.ErrNoSuchUpload) {
		t.Errorf("Abort on sealed = %v", err)
	}
	if _, err := s.Assemble("bkt", "k", id, list); !errors.Is(err, store.ErrNoSuchUpload) {
		t.Errorf("Assemble on sealed = %v", err)
	}
	if _, err := s.ListParts("bkt", "k", id, store.PartListOptions{}); !errors.Is(err, store.ErrNoSuchUpload) {
		t.Errorf("ListParts on sealed = %v", err)
	}
	if _, err := s.OpenSealed(openID); !errors.Is(err, store.ErrNoSuchUpload) {
		t.Errorf("OpenSealed(open upload) = %v", err)
	}
}

// TestCrashLeftovers plants what a crash can leave and checks Open tidies
// it without losing a committed part.
func TestCrashLeftovers(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, true)
	id := newUpload(t, s, "k")
	p1 := putPart(t, s, "k", id, 1, []byte("one"))
	p2 := putPart(t, s, "k", id, 2, []byte("two"))
	s.Close()
	udir := filepath.Join(dir, id)
	plant := func(name, content string) {
		t.Helper()
		must(t, os.WriteFile(filepath.Join(udir, name), []byte(content), 0o644))
	}
	plant("tmp-0123", "half a part")
	plant("part-1-feedface", "new data, info not yet renamed")
	plant("part-9.json", `{"number":9,"file":"part-9-gone","etag":"x","size":1,"mtime":1}`)
	plant("part-8-abcd", "8")
	plant("part-8.json", `{"number":8,"file":"part-8-abcd","etag":"x","size":5,"mtime":1}`) // size differs
	must(t, os.MkdirAll(filepath.Join(dir, newPrefix+"0000000000000001aa"), 0o755))
	must(t, os.MkdirAll(filepath.Join(dir, trashPrefix+id+"x", "sub"), 0o755))
	foreign := filepath.Join(dir, "not-an-upload")
	must(t, os.MkdirAll(foreign, 0o755))

	s2 := openStore(t, dir, true)
	parts := listAllParts(t, s2, "k", id)
	if len(parts) != 2 || parts[0] != p1 || parts[1] != p2 {
		t.Fatalf("parts after crash = %+v, want %+v %+v", parts, p1, p2)
	}
	if got := dirNames(t, s2, id); len(got) != 5 {
		t.Fatalf("upload dir after recovery holds %v, want upload.json and two parts", got)
	}
	names, _ := readNames(dir)
	slices.Sort(names)
	if !slices.Equal(names, []string{id, "not-an-upload"}) {
		t.Fatalf("store dir after recovery holds %v", names)
	}
	for _, p := range parts {
		a, err := s2.Assemble("bkt", "k", id, []store.CompletePart{{Number: p.Number, ETag: p.ETag}})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := string(readAll(t, a)), []string{"one", "two"}[p.Number-1]; got != want {
			t.Fatalf("part %d after recovery reads %q, want %q", p.Number, got, want)
		}
		a.Close()
	}
}

// TestCrashMidReplace: the new info was renamed but the old data file not
// yet deleted; Open keeps the new part and drops the old file.
func TestCrashMidReplace(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, true)
	id := newUpload(t, s, "k")
	putPart(t, s, "k", id, 1, []byte("old"))
	var oldFile string
	for _, n := range dirNames(t, s, id) {
		if strings.HasPrefix(n, "part-1-") {
			oldFile = n
		}
	}
	// Keep a copy of the old data file and restore it after the replace.
	old, err := os.ReadFile(filepath.Join(dir, id, oldFile))
	if err != nil {
		t.Fatal(err)
	}
	p := putPart(t, s, "k", id, 1, []byte("new!"))
	must(t, os.WriteFile(filepath.Join(dir, id, oldFile), old, 0o644))
	s.Close()
	s2 := openStore(t, dir, true)
	if parts := listAllParts(t, s2, "k", id); len(parts) != 1 || parts[0] != p {
		t.Fatalf("parts = %+v, want %+v", parts, p)
	}
	if _, err := os.Stat(filepath.Join(dir, id, oldFile)); !os.IsNotExist(err) {
		t.Fatalf("old data file kept: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
