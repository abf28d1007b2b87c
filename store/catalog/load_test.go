// Load tests: the changes a reload reports, batches, aborts, coverage, and
// writes through the node during a Load.
package catalog

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// changeStrings renders changes as "kind:key".
func changeStrings(cs []Change) []string {
	names := map[ChangeKind]string{Added: "added", Changed: "changed", Unchanged: "unchanged", Removed: "removed"}
	out := make([]string, len(cs))
	for i, c := range cs {
		k := c.Entry.Key
		if c.Kind == Removed {
			k = c.Old.Key
		}
		out[i] = names[c.Kind] + ":" + k
	}
	return out
}

func TestLoadChanges(t *testing.T) {
	db := openT(t)
	first := loadKeys(t, db, "b", "d/", []string{"d/a", "d/b", "d/c", "d/d", "d/e", "d/f"}, 1)
	if want := []string{"added:d/a", "added:d/b", "added:d/c", "added:d/d", "added:d/e", "added:d/f"}; !slices.Equal(changeStrings(first), want) {
		t.Fatalf("first load: %q, want %q", changeStrings(first), want)
	}
	// Second listing: d/a removed (leading), d/b new ETag, d/c new size,
	// d/cc added, d/d same, d/e only a new time, d/f removed (trailing).
	b2 := entryOf("d/b", 1)
	b2.ETag = "other"
	c2 := entryOf("d/c", 1)
	c2.Size++
	e2 := entryOf("d/e", 1)
	e2.LastModified = e2.LastModified.Add(1e9)
	listing := []Entry{b2, c2, entryOf("d/cc", 1), entryOf("d/d", 1), e2}
	var got []Change
	err := db.Load("b", "d/", t0, sliceNext(listing), func(c Change) error { got = append(got, c); return nil })
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"removed:d/a", "changed:d/b", "changed:d/c", "added:d/cc", "unchanged:d/d", "unchanged:d/e", "removed:d/f"}
	if !slices.Equal(changeStrings(got), want) {
		t.Fatalf("second load: %q, want %q", changeStrings(got), want)
	}
	if got[1].Old.ETag != entryOf("d/b", 1).ETag || got[1].Entry.ETag != "other" || got[0].Old.Size != entryOf("d/a", 1).Size {
		t.Fatalf("Old/Entry wrong: %+v", got[:2])
	}
	for _, e := range listing {
		if g, ok, err := db.Get("b", e.Key); err != nil || !ok || !sameEntry(g, e) {
			t.Fatalf("Get(%s) = %+v %v %v, want %+v", e.Key, g, ok, err, e)
		}
	}
	for _, k := range []string{"d/a", "d/f"} {
		if _, ok, _ := db.Get("b", k); ok {
			t.Fatalf("removed %s still held", k)
		}
	}
}

// TestLoadBatches reloads more keys than a batch holds, with removals
// inside, across and after batches.
func TestLoadBatches(t *testing.T) {
	db := openT(t)
	n := 3*batchSize + 17
	var keys []string
	for i := range n {
		keys = append(keys, fmt.Sprintf("k%06d", i))
	}
	if cs := loadKeys(t, db, "b", "", keys, 0); len(cs) != n {
		t.Fatalf("%d changes, want %d", len(cs), n)
	}
	// Keep every third key of the first half and the one at n/2+batchSize.
	var kept []string
	for i := 0; i < n/2; i += 3 {
		kept = append(kept, keys[i])
	}
	kept = append(kept, keys[n/2+batchSize])
	// The Load streams: it never reads more than a batch of the listing
	// ahead of the changes it has reported.
	entries := make([]Entry, len(kept))
	for i, k := range kept {
		entries[i] = entryOf(k, 0)
	}
	inner, read, ahead := sliceNext(entries), 0, 0
	next := func() (Entry, bool, error) { read++; return inner() }
	var cs []Change
	each := func(c Change) error {
		if c.Kind != Removed {
			ahead = max(ahead, read-len(cs))
		}
		cs = append(cs, c)
		return nil
	}
	must(t, db.Load("b", "", t0, next, each))
	if ahead > batchSize+1 {
		t.Fatalf("Load read %d entries ahead of its changes", ahead)
	}
	var unchanged, removed int
	for i, c := range cs {
		if i > 0 && changeKey(cs[i-1]) >= changeKey(c) {
			t.Fatalf("changes out of order at %d: %q then %q", i, changeKey(cs[i-1]), changeKey(c))
		}
		switch c.Kind {
		case Unchanged:
			unchanged++
		case Removed:
			removed++
		default:
			t.Fatalf("unexpected change %+v", c)
		}
	}
	if unchanged != len(kept) || removed != n-len(kept) {
		t.Fatalf("%d unchanged, %d removed; want %d, %d", unchanged, removed, len(kept), n-len(kept))
	}
	if objs, _, err := db.Count("b", ""); err != nil || objs != int64(len(kept)) {
		t.Fatalf("Count = %d, %v; want %d", objs, err, len(kept))
	}
}

func changeKey(c Change) string {
	if c.Kind == Removed {
		return c.Old.Key
	}
	return c.Entry.Key
}

// TestLoadWritesWin puts and deletes keys under the prefix while the Load
// runs (from next and from each): the Load must not undo them.
func TestLoadWritesWin(t *testing.T) {
	db := openT(t)
	var keys []string
	for i := range 2*batchSize + 10 {
		keys = append(keys, fmt.Sprintf("p/%06d", i))
	}
	loadKeys(t, db, "b", "p/", keys, 1)
	late := keys[batchSize+5]     // Put from next, listed in a later batch
	gone := keys[batchSize+6]     // Deleted from next, listed in a later batch
	extra := "p/000000x"          // Put from next, not in the listing
	fromEach := keys[2*batchSize] // Put from each, listed in a later batch
	lateEntry, eachEntry, extraEntry := entryOf(late, 9), entryOf(fromEach, 9), entryOf(extra, 9)
	listing := make([]Entry, len(keys))
	for i, k := range keys {
		listing[i] = entryOf(k, 2)
	}
	inner := sliceNext(listing)
	calls := 0
	next := func() (Entry, bool, error) {
		if calls++; calls == 3 {
			for _, err := range []error{db.Put("b", lateEntry), db.Delete("b", gone), db.Put("b", extraEntry)} {
				if err != nil {
					return Entry{}, false, err
				}
			}
		}
		return inner()
	}
	each := func(c Change) error {
		if c.Entry.Key == keys[0] {
			return db.Put("b", eachEntry)
		}
		return nil
	}
	if err := db.Load("b", "p/", t0, next, each); err != nil {
		t.Fatal(err)
	}
	for _, want := range []Entry{lateEntry, eachEntry, extraEntry, entryOf(keys[1], 2), entryOf(keys[len(keys)-1], 2)} {
		if g, ok, err := db.Get("b", want.Key); err != nil || !ok || !sameEntry(g, want) {
			t.Fatalf("Get(%s) = %+v %v %v, want %+v", want.Key, g, ok, err, want)
		}
	}
	if _, ok, _ := db.Get("b", gone); ok {
		t.Fatalf("%s deleted during the Load came back", gone)
	}
}

// TestWritesIgnored: writes outside every covered prefix and running Load
// do not reach the catalog.
func TestWritesIgnored(t *testing.T) {
	db := openT(t)
	loadKeys(t, db, "b", "a/", []string{"a/1"}, 0)
	loadKeys(t, db, "c", "", []string{"z"}, 0)
	// Uncover c by a failed Load: the catalog still holds c/z.
	boom := errors.New("boom")
	if err := db.Load("c", "", t0, func() (Entry, bool, error) { return Entry{}, false, boom }, nil); !errors.Is(err, boom) {
		t.Fatalf("Load = %v, want %v", err, boom)
	}
	must(t, db.Put("b", entryOf("b/1", 0)))   // outside a/
	must(t, db.Put("b", entryOf("a", 0)))     // "a" is not under "a/"
	must(t, db.Put("other", entryOf("x", 0))) // no coverage at all
	must(t, db.Delete("c", "z"))              // c is no longer covered
	must(t, db.Put("b", entryOf("a/2", 0)))   // covered: kept
	for _, c := range []struct {
		bucket, key string
		held        bool
	}{{"b", "b/1", false}, {"b", "a", false}, {"other", "x", false}, {"c", "z", true}, {"b", "a/2", true}} {
		if _, ok, err := db.Get(c.bucket, c.key); err != nil || ok != c.held {
			t.Fatalf("Get(%s, %s) held=%v err=%v, want held=%v", c.bucket, c.key, ok, err, c.held)
		}
	}
	must(t, db.Delete("b", "a/2"))
	if _, ok, _ := db.Get("b", "a/2"); ok {
		t.Fatal("covered Delete ignored")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestLoadAbort: errors from next or each, or a bad listing, fail the
// Load and leave the prefix uncovered.
func TestLoadAbort(t *testing.T) {
	db := openT(t)
	boom := errors.New("boom")
	cases := []struct {
		name string
		next func() (Entry, bool, error)
		each func(Change) error
		want error
	}{
		{"next", func() (Entry, bool, error) { return Entry{}, false, boom }, nil, boom},
		{"each", sliceNext([]Entry{entryOf("a", 0)}), func(Change) error { return boom }, boom},
		{"order", sliceNext([]Entry{entryOf("b", 0), entryOf("a", 0)}), nil, errLoad},
		{"duplicate", sliceNext([]Entry{entryOf("a", 0), entryOf("a", 0)}), nil, errLoad},
		{"outside", sliceNext([]Entry{entryOf("x", 0)}), nil, errLoad},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			loadKeys(t, db, "b", "", nil, 0) // covers ""
			prefix := ""
			if c.name == "outside" {
				prefix = "p/"
			}
			each := c.each
			if each == nil {
				each = func(Change) error { return nil }
			}
			if err := db.Load("b", prefix, t0, c.next, each); !errors.Is(err, c.want) {
				t.Fatalf("Load = %v, want %v", err, c.want)
			}
			if prefix == "" {
				if _, ok := db.Covered("b", ""); ok {
					t.Fatal("covered after an aborted Load")
				}
			}
		})
	}
}

// TestLoadOverlap: a Load of a prefix inside one that is loading waits
// for it; a Load of another prefix does not.
func TestLoadOverlap(t *testing.T) {
	db := openT(t)
	release := make(chan struct{})
	firstDone := make(chan error, 1)
	started := make(chan struct{})
	go func() {
		once := false
		firstDone <- db.Load("b", "a/", t0, func() (Entry, bool, error) {
			if !once {
				once = true
				close(started)
				<-release
			}
			return Entry{}, false, nil
		}, nil)
	}()
	<-started
	// Another prefix runs now.
	otherDone := make(chan error, 1)
	go func() { otherDone <- db.Load("b", "b/", t0, sliceNext(nil), nil) }()
	select {
	case err := <-otherDone:
		must(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Load of b/ blocked by a Load of a/")
	}
	// An enclosing prefix waits.
	var innerRan atomic.Bool
	innerDone := make(chan error, 1)
	go func() {
		innerDone <- db.Load("b", "", t0, func() (Entry, bool, error) {
			innerRan.Store(true)
			return Entry{}, false, nil
		}, nil)
	}()
	select {
	case err := <-innerDone:
		t.Fatalf("overlapping Load ran concurrently: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	if innerRan.Load() {
		t.Fatal("overlapping Load started listing")
	}
	close(release)
	for _, ch := range []chan error{firstDone, innerDone} {
		select {
		case err := <-ch:
			must(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("Load did not finish")
		}
	}
	if cov, _ := db.Coverage("b"); len(cov) != 1 || cov[0].Prefix != "" {
		t.Fatalf("Coverage = %+v", cov)
	}
}
