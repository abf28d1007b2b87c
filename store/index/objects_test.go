// Tests of UnitObjects: distinct objects per unit, from the reverse map.
package index

import (
	"slices"
	"testing"

	"github.com/granary-dev/granary/store"
)

func unitObjects(t *testing.T, d *DB, unit uint64, limit int) [][2]string {
	t.Helper()
	var got [][2]string
	err := d.UnitObjects(unit, func(bucket, key string) bool {
		got = append(got, [2]string{bucket, key})
		return len(got) < limit
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestUnitObjects(t *testing.T) {
	d, _ := openTest(t)
	put := func(bucket, key, etag string, i int64, unit uint64) {
		t.Helper()
		id := store.ChunkID{Bucket: bucket, Key: key, ETag: etag, Index: i}
		loc := Location{Kind: InSegment, Unit: unit, Offset: i, Length: 1}
		if _, err := d.Insert(id, loc, func(*Location) bool { return true }); err != nil {
			t.Fatal(err)
		}
	}
	// Unit 1: two versions of b/a, b/ab, c/x; unit 2: b/z.
	put("b", "a", "e1", 0, 1)
	put("b", "a", "e1", 1, 1)
	put("b", "a", "e2", 0, 1)
	put("b", "ab", "e1", 0, 1)
	put("c", "x", "e1", 0, 1)
	put("b", "z", "e1", 0, 2)
	// c/x moves to unit 3: no longer in unit 1.
	put("c", "x", "e1", 0, 3)
	want := [][2]string{{"b", "a"}, {"b", "ab"}}
	if got := unitObjects(t, d, 1, 100); !slices.Equal(got, want) {
		t.Fatalf("unit 1 objects = %q, want %q", got, want)
	}
	if got := unitObjects(t, d, 1, 1); !slices.Equal(got, want[:1]) {
		t.Fatalf("stopping after one: %q", got)
	}
	if got := unitObjects(t, d, 3, 100); !slices.Equal(got, [][2]string{{"c", "x"}}) {
		t.Fatalf("unit 3 objects = %q", got)
	}
	if _, err := d.DeleteObject("b", "a"); err != nil {
		t.Fatal(err)
	}
	if got := unitObjects(t, d, 1, 100); !slices.Equal(got, want[1:]) {
		t.Fatalf("after delete: %q", got)
	}
	if got := unitObjects(t, d, 9, 100); len(got) != 0 {
		t.Fatalf("empty unit: %q", got)
	}
}
