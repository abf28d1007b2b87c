// Test helpers: opening a catalog in a temporary directory, loading key
// sets, and adapting the catalog to storetest's listing model.
package catalog

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/granary-dev/granary/store"
)

// t0 is a fixed listing time; entries get t0 plus their index in seconds.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func openAt(t testing.TB, path string) *DB {
	t.Helper()
	db, err := Open(Options{Path: path, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func openT(t testing.TB) *DB {
	t.Helper()
	return openAt(t, filepath.Join(t.TempDir(), "catalog.db"))
}

// entryOf is the entry the tests give key: its ETag and size derive from
// the key and the version v.
func entryOf(key string, v int) Entry {
	return Entry{Key: key, Size: int64(len(key) + v), ETag: fmt.Sprintf("etag-%d-%s", v, key), LastModified: t0.Add(time.Duration(v) * time.Second)}
}

// sliceNext yields entries in order, then ok=false.
func sliceNext(entries []Entry) func() (Entry, bool, error) {
	i := 0
	return func() (Entry, bool, error) {
		if i == len(entries) {
			return Entry{}, false, nil
		}
		i++
		return entries[i-1], true, nil
	}
}

// loadKeys loads the sorted entries of keys (version v) as bucket/prefix
// and returns the changes reported.
func loadKeys(t testing.TB, db *DB, bucket, prefix string, keys []string, v int) []Change {
	t.Helper()
	sorted := slices.Clone(keys)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	entries := make([]Entry, len(sorted))
	for i, k := range sorted {
		entries[i] = entryOf(k, v)
	}
	var changes []Change
	err := db.Load(bucket, prefix, t0, sliceNext(entries), func(c Change) error {
		changes = append(changes, c)
		return nil
	})
	if err != nil {
		t.Fatalf("Load(%s, %q): %v", bucket, prefix, err)
	}
	return changes
}

// origin adapts a catalog to store.Origin for storetest.ListAll; only
// List is implemented.
type origin struct {
	store.Origin
	db *DB
}

func (o origin) List(_ context.Context, bucket string, opts store.ListOptions) (store.ListPage, error) {
	return o.db.List(bucket, opts)
}

// pageStrings renders a page as storetest.ListEntry prints: keys, and
// common prefixes as "p(prefix)", merged in S3 order.
func pageStrings(p store.ListPage) []string {
	type ent struct{ name, s string }
	var all []ent
	for _, o := range p.Objects {
		all = append(all, ent{o.Key, o.Key})
	}
	for _, cp := range p.CommonPrefixes {
		all = append(all, ent{cp, cp + "(prefix)"})
	}
	slices.SortFunc(all, func(a, b ent) int { return strings.Compare(a.name, b.name) })
	out := make([]string, len(all))
	for i, e := range all {
		out[i] = e.s
	}
	return out
}

// strs renders model entries with their String method.
func strs[T fmt.Stringer](es []T) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.String()
	}
	return out
}
