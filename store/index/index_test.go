// Tests of the chunk index: key encoding, entry lifecycle, reverse map,
// persistence and corrupt-file detection.
package index

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/granary-dev/granary/store"
)

func openTest(t *testing.T) (*DB, string) {
	t.Helper()
	return openWith(t, Options{})
}

// reopen opens the index file at path again, closed at the test's end.
func reopen(t *testing.T, path string) *DB {
	t.Helper()
	d, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

func openWith(t *testing.T, o Options) (*DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "index.db")
	d, err := Open(path, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d, path
}

func TestChunkKeyRoundTrip(t *testing.T) {
	for _, id := range []store.ChunkID{
		{},
		{Bucket: "b", Key: "k", ETag: "e", Index: 1},
		{Bucket: "b", Key: "a\x00b/é", ETag: "\xff", Index: 1 << 40},
		{Bucket: "b", Key: string(make([]byte, 300)), ETag: "x", Index: -1},
	} {
		got, err := ParseChunkKey(ChunkKey(id))
		if err != nil || got != id {
			t.Fatalf("ParseChunkKey(ChunkKey(%+v)) = %+v, %v", id, got, err)
		}
	}
	for _, bad := range [][]byte{nil, {5, 'a'}, {1, 'a', 1, 'b', 1, 'c', 0}, {0xff}} {
		if _, err := ParseChunkKey(bad); !errors.Is(err, ErrMalformed) {
			t.Fatalf("ParseChunkKey(%q) = %v, want ErrMalformed", bad, err)
		}
	}
}

// TestObjectPrefixUnambiguous: an object's prefix covers its own chunks
// and no other object's, for names that collide when concatenated.
func TestObjectPrefixUnambiguous(t *testing.T) {
	objs := [][2]string{{"b", "a"}, {"b", "ab"}, {"b", "a/"}, {"b", "x/y"}, {"b/x", "y"}, {"bx", "/y"}, {"", "ba"}, {"b", ""}}
	for _, o := range objs {
		p := ObjectPrefix(o[0], o[1])
		for _, o2 := range objs {
			k := ChunkKey(store.ChunkID{Bucket: o2[0], Key: o2[1], ETag: "e", Index: 3})
			if got, want := bytes.HasPrefix(k, p), o == o2; got != want {
				t.Errorf("ObjectPrefix(%q) prefixes a chunk of %q: %v", o, o2, got)
			}
		}
	}
}

func FuzzChunkKey(f *testing.F) {
	f.Add("b", "k", "e", int64(0), "b", "k2", "e", int64(0))
	f.Add("b", "x/y", "e", int64(1), "b/x", "y", "e", int64(1))
	f.Fuzz(func(t *testing.T, b1, k1, e1 string, i1 int64, b2, k2, e2 string, i2 int64) {
		id1 := store.ChunkID{Bucket: b1, Key: k1, ETag: e1, Index: i1}
		id2 := store.ChunkID{Bucket: b2, Key: k2, ETag: e2, Index: i2}
		if got, err := ParseChunkKey(ChunkKey(id1)); err != nil || got != id1 {
			t.Fatalf("round trip of %+v = %+v, %v", id1, got, err)
		}
		if bytes.Equal(ChunkKey(id1), ChunkKey(id2)) != (id1 == id2) {
			t.Fatalf("keys of %+v and %+v collide", id1, id2)
		}
		inObj := bytes.HasPrefix(ChunkKey(id2), ObjectPrefix(b1, k1))
		if inObj != (b1 == b2 && k1 == k2) {
			t.Fatalf("prefix of %q/%q vs chunk %+v: %v", b1, k1, id2, inObj)
		}
	})
}

func TestEntryLifecycle(t *testing.T) {
	d, _ := openTest(t)
	id := store.ChunkID{Bucket: "b", Key: "k", ETag: "e1", Index: 2}
	if _, err := d.Lookup(id); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Lookup of a missing id = %v", err)
	}
	loc := Location{Kind: InSegment, Unit: 7, Offset: 4096, Length: 100, CRC: 0xdeadbeef}
	if ok, err := d.Insert(id, loc, nil); !ok || err != nil {
		t.Fatalf("Insert = %v, %v", ok, err)
	}
	other := Location{Kind: InFile, Unit: 8, Length: 100}
	if ok, err := d.Insert(id, other, nil); ok || err != nil {
		t.Fatalf("second Insert = %v, %v; want false, nil", ok, err)
	}
	if got, err := d.Lookup(id); err != nil || got != loc {
		t.Fatalf("Lookup = %+v, %v; want %+v", got, err, loc)
	}
	if ok, _ := d.Remove(id, other); ok {
		t.Fatal("Remove with a stale location removed the entry")
	}
	if ok, err := d.Remove(id, loc); !ok || err != nil || d.Count() != 0 {
		t.Fatalf("Remove = %v, %v; Count %d", ok, err, d.Count())
	}
	if units, _ := d.Units(); len(units) != 0 {
		t.Fatalf("Units after Remove = %v", units)
	}
	refused := store.ChunkID{Bucket: "b", Key: "k", ETag: "e1", Index: 3}
	if ok, err := d.Insert(refused, loc, func(*Location) bool { return false }); ok || err != nil {
		t.Fatalf("Insert refused by admit = %v, %v", ok, err)
	}
	if _, err := d.Lookup(refused); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("refused insert is indexed: %v", err)
	}
}

func TestObjectsAndUnits(t *testing.T) {
	d, path := openTest(t)
	put := func(b, k, e string, i int64, unit uint64) {
		t.Helper()
		id := store.ChunkID{Bucket: b, Key: k, ETag: e, Index: i}
		if _, err := d.Insert(id, Location{Kind: InSegment, Unit: unit, Offset: i, Length: 1}, nil); err != nil {
			t.Fatal(err)
		}
	}
	put("b", "a", "e1", 0, 1)
	put("b", "a", "e1", 1, 2)
	put("b", "a", "e2", 0, 3)
	put("b", "ab", "e1", 0, 1)
	put("b/x", "y", "e1", 0, 5)
	if vs, _ := d.Versions("b", "a"); !slices.Equal(vs, []string{"e1", "e2"}) {
		t.Fatalf("Versions(b, a) = %q", vs)
	}
	// Held sums one version's lengths: e1 of b/a, not e2, not b/ab's.
	for _, c := range []struct {
		k, e string
		n    int64
	}{{"a", "e1", 2}, {"a", "e2", 1}, {"ab", "e1", 1}, {"a", "e", 0}, {"x", "e1", 0}} {
		if n, err := d.Held("b", c.k, c.e); n != c.n || err != nil {
			t.Fatalf("Held(b, %s, %s) = %d, %v; want %d", c.k, c.e, n, err, c.n)
		}
	}
	if us, _ := d.Units(); !slices.Equal(us, []uint64{1, 2, 3, 5}) {
		t.Fatalf("Units = %v", us)
	}
	locs, err := d.DeleteObject("b", "a")
	if err != nil || len(locs) != 3 || d.Count() != 2 {
		t.Fatalf("DeleteObject = %v, %v; Count %d", locs, err, d.Count())
	}
	if n, err := d.DropUnits([]uint64{1, 9}); n != 1 || err != nil {
		t.Fatalf("DropUnits = %d, %v", n, err)
	}
	if us, _ := d.Units(); !slices.Equal(us, []uint64{5}) {
		t.Fatalf("Units after drops = %v", us)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Lookup(store.ChunkID{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Lookup after Close = %v", err)
	}
	d2 := reopen(t, path)
	if d2.Count() != 1 {
		t.Fatalf("Count after reopen = %d, want 1", d2.Count())
	}
	if _, err := d2.Lookup(store.ChunkID{Bucket: "b/x", Key: "y", ETag: "e1"}); err != nil {
		t.Fatalf("entry lost across reopen: %v", err)
	}
}

func TestOpenCorrupt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "index.db")
	if err := os.WriteFile(path, bytes.Repeat([]byte("not a bbolt file "), 1000), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path, Options{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open of garbage = %v, want ErrCorrupt", err)
	}
}

// TestInsertReplacesStale: admit can overwrite an entry it judges stale;
// the reverse map and the count follow.
func TestInsertReplacesStale(t *testing.T) {
	d, _ := openTest(t)
	id := store.ChunkID{Bucket: "b", Key: "k", ETag: "e1"}
	stale := Location{Kind: InSegment, Unit: 3, Length: 10}
	fresh := Location{Kind: InFile, Unit: 4, Length: 10}
	if ok, err := d.Insert(id, stale, nil); !ok || err != nil {
		t.Fatalf("Insert = %v, %v", ok, err)
	}
	var seen *Location
	ok, err := d.Insert(id, fresh, func(old *Location) bool { seen = old; return old != nil && old.Unit == 3 })
	if !ok || err != nil || seen == nil || *seen != stale {
		t.Fatalf("replacing Insert = %v, %v (admit saw %+v)", ok, err, seen)
	}
	if got, _ := d.Lookup(id); got != fresh || d.Count() != 1 {
		t.Fatalf("after replace: %+v, Count %d", got, d.Count())
	}
	if us, _ := d.Units(); !slices.Equal(us, []uint64{4}) {
		t.Fatalf("Units after replace = %v, want [4]", us)
	}
}
