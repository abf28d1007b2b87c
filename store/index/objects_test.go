// Tests of the whole-unit queries: UnitObjects (distinct objects per unit,
// from the reverse map) and UnitBucketBytes.
package index

import (
	"maps"
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

// TestUnitBucketBytes: lengths summed per unit and bucket, following a
// move to another unit and a delete; buckets whose names prefix each
// other stay apart.
func TestUnitBucketBytes(t *testing.T) {
	d, _ := openTest(t)
	put := func(bucket, key string, i int64, unit uint64, n int64) {
		t.Helper()
		id := store.ChunkID{Bucket: bucket, Key: key, ETag: "e", Index: i}
		loc := Location{Kind: InSegment, Unit: unit, Offset: i, Length: n}
		if _, err := d.Insert(id, loc, func(*Location) bool { return true }); err != nil {
			t.Fatal(err)
		}
	}
	put("b", "k", 0, 1, 10)
	put("b", "k", 1, 1, 20)
	put("bb", "k", 0, 1, 5)
	put("b", "z", 0, 2, 7)
	put("c", "x", 0, 2, 3)
	put("c", "x", 0, 3, 4) // moves to unit 3
	if _, err := d.DeleteObject("b", "z"); err != nil {
		t.Fatal(err)
	}
	got, err := d.UnitBucketBytes()
	if err != nil {
		t.Fatal(err)
	}
	want := map[uint64]map[string]int64{1: {"b": 30, "bb": 5}, 3: {"c": 4}}
	if !maps.EqualFunc(got, want, maps.Equal) {
		t.Fatalf("UnitBucketBytes = %v, want %v", got, want)
	}
}
