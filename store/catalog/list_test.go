// Listing tests: every page of random listings against storetest's model,
// and common prefixes skipped with a Seek.
package catalog

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/storetest"
)

// pieces make keys with many shared prefixes, delimiters inside keys,
// multi-byte UTF-8 and bytes around the delimiter in S3 order.
var pieces = []string{"a", "b", "/", "é", "-", ".", "0", "ab/", "日本", "//", "\xff", " "}

func randKey(r *rand.Rand) string {
	var sb strings.Builder
	for n := 1 + r.IntN(6); n > 0; n-- {
		sb.WriteString(pieces[r.IntN(len(pieces))])
	}
	return sb.String()
}

// randPrefixOf returns a random prefix (possibly empty or whole) of one
// of keys, or of a random key.
func randPrefixOf(r *rand.Rand, keys []string) string {
	k := randKey(r)
	if len(keys) > 0 && r.IntN(4) > 0 {
		k = keys[r.IntN(len(keys))]
	}
	return k[:r.IntN(len(k)+1)]
}

func randOpts(r *rand.Rand, keys []string) store.ListOptions {
	delims := []string{"", "", "/", "/", "b", "é", "a/", "//", "\xff"}
	opts := store.ListOptions{Delimiter: delims[r.IntN(len(delims))], MaxKeys: r.IntN(8)}
	if r.IntN(3) > 0 {
		opts.Prefix = randPrefixOf(r, keys)
	}
	switch r.IntN(4) {
	case 1:
		opts.After = randPrefixOf(r, keys)
	case 2:
		if model := storetest.ListModel(keys, opts); len(model) > 0 {
			opts.After = strings.TrimSuffix(model[r.IntN(len(model))].String(), "(prefix)")
		}
	case 3:
		opts.After = randKey(r)
	}
	return opts
}

func TestListModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	db := openT(t)
	o := origin{db: db}
	for round := range 40 {
		bucket := fmt.Sprintf("b%d", round)
		keys := make([]string, r.IntN(200))
		for i := range keys {
			keys[i] = randKey(r)
		}
		loadKeys(t, db, bucket, "", keys, 0)
		for range 50 {
			opts := randOpts(r, keys)
			// One page against the model's head.
			page, err := db.List(bucket, opts)
			if err != nil {
				t.Fatal(err)
			}
			model := strs(storetest.ListModel(keys, opts))
			limit := opts.MaxKeys
			if limit <= 0 {
				limit = 1000
			}
			want, truncated := model, false
			if len(model) > limit {
				want, truncated = model[:limit], true
			}
			got := pageStrings(page)
			if !slices.Equal(got, want) || page.IsTruncated != truncated {
				t.Fatalf("keys %q\nList(%+v) = %q truncated=%v\nwant %q truncated=%v", keys, opts, got, page.IsTruncated, want, truncated)
			}
			// The whole listing, page by page through NextAfter.
			all := storetest.ListAll(t, o, bucket, opts)
			if !slices.Equal(all, storetest.ListModel(keys, opts)) {
				t.Fatalf("keys %q\nListAll(%+v) = %v\nwant %v", keys, opts, all, model)
			}
		}
	}
}

func TestListEntries(t *testing.T) {
	db := openT(t)
	e := Entry{Key: "k/é", Size: 42, ETag: `"abc"`, LastModified: t0.Add(123)}
	if err := db.Load("b", "", t0, sliceNext([]Entry{e, {Key: "z"}}), func(Change) error { return nil }); err != nil {
		t.Fatal(err)
	}
	page, err := db.List("b", store.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []store.ObjectInfo{
		{Key: e.Key, Size: e.Size, ETag: e.ETag, LastModified: e.LastModified},
		{Key: "z"},
	}
	if len(page.Objects) != 2 || page.IsTruncated || page.NextAfter != "" {
		t.Fatalf("page %+v", page)
	}
	for i, o := range page.Objects {
		if o.Key != want[i].Key || o.Size != want[i].Size || o.ETag != want[i].ETag || !o.LastModified.Equal(want[i].LastModified) {
			t.Fatalf("object %d = %+v, want %+v", i, o, want[i])
		}
	}
	if p, err := db.List("nobucket", store.ListOptions{}); err != nil || len(p.Objects) != 0 {
		t.Fatalf("List of an unknown bucket = %+v, %v", p, err)
	}
}

// TestListDelimiterSkips lists 50 directories of 1000 keys with "/": the
// page holds the 50 common prefixes and takes about one Seek each, not a
// walk over the 50,000 keys.
func TestListDelimiterSkips(t *testing.T) {
	db := openT(t)
	var keys []string
	for d := range 50 {
		for k := range 1000 {
			keys = append(keys, fmt.Sprintf("dir%03d/key%04d", d, k))
		}
	}
	keys = append(keys, "top")
	loadKeys(t, db, "b", "", keys, 0)
	page, moves, err := db.list("b", store.ListOptions{Delimiter: "/"})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.CommonPrefixes) != 50 || len(page.Objects) != 1 || page.IsTruncated {
		t.Fatalf("page: %d prefixes, %d objects, truncated %v", len(page.CommonPrefixes), len(page.Objects), page.IsTruncated)
	}
	if moves > 60 {
		t.Fatalf("listing 51 entries took %d cursor moves", moves)
	}
	// Paging: After a common prefix skips its keys too.
	page, moves, err = db.list("b", store.ListOptions{Delimiter: "/", After: "dir010/", MaxKeys: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := pageStrings(page); !slices.Equal(got, []string{"dir011/(prefix)", "dir012/(prefix)"}) || !page.IsTruncated || page.NextAfter != "dir012/" || moves > 6 {
		t.Fatalf("page %q truncated %v next %q moves %d", got, page.IsTruncated, page.NextAfter, moves)
	}
}
