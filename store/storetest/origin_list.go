// Origin conformance cases for listings: S3 byte order, prefixes,
// delimiters, After and paging, checked against a reference model.
package storetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/granary-dev/granary/store"
)

// listKeys are keys whose S3 order a naive directory walk gets wrong:
// '-' (0x2d) < '.' (0x2e) < '/' (0x2f) < '0' (0x30), so "a-b" < "a.txt" <
// "a/b" < "a0", while sorting names puts the directory "a" first. No key is
// also a directory of another ("a" with "a/b"): a filesystem origin cannot
// store that; testKeyAndPrefix covers it.
var listKeys = []string{
	"a-b", "a.txt", "a/b", "a/c/d", "a/c/e", "a0", "b.txt", "b/x/y/z", "b0", "c d", "é/1",
}

// putKeys puts each key with its name as content, in random order (so a
// store that lists in creation order fails), and returns the infos.
func putKeys(t *testing.T, o store.Origin, bucket string, keys []string) map[string]store.ObjectInfo {
	t.Helper()
	infos := make(map[string]store.ObjectInfo, len(keys))
	for _, i := range rand.Perm(len(keys)) {
		infos[keys[i]] = putBytes(t, o, bucket, keys[i], []byte(keys[i]), store.ObjectMeta{})
	}
	return infos
}

// ListEntry is one item of a listing: a key or a common prefix. Entries
// compare with ==, and print as the key or "prefix(prefix)".
type ListEntry struct {
	name string
	cp   bool
}

func (e ListEntry) String() string {
	if e.cp {
		return e.name + "(prefix)"
	}
	return e.name
}

// ListModel is the reference listing: the entries a complete listing of keys
// holds under opts (MaxKeys ignored), in order.
func ListModel(keys []string, opts store.ListOptions) []ListEntry {
	sorted := slices.Clone(keys)
	slices.Sort(sorted)
	var out []ListEntry
	for _, k := range sorted {
		if !strings.HasPrefix(k, opts.Prefix) {
			continue
		}
		e := ListEntry{name: k}
		if opts.Delimiter != "" {
			if i := strings.Index(k[len(opts.Prefix):], opts.Delimiter); i >= 0 {
				e = ListEntry{name: k[:len(opts.Prefix)+i+len(opts.Delimiter)], cp: true}
			}
		}
		if e.name <= opts.After || len(out) > 0 && out[len(out)-1] == e {
			continue
		}
		out = append(out, e)
	}
	return out
}

// pageEntries merges a page's objects and common prefixes in S3 order.
func pageEntries(p store.ListPage) []ListEntry {
	var out []ListEntry
	for _, obj := range p.Objects {
		out = append(out, ListEntry{name: obj.Key})
	}
	for _, cp := range p.CommonPrefixes {
		out = append(out, ListEntry{name: cp, cp: true})
	}
	slices.SortFunc(out, func(a, b ListEntry) int { return strings.Compare(a.name, b.name) })
	return out
}

// ListAll pages through o's listing with opts.MaxKeys per page, checking the
// page invariants, and returns every ListEntry seen.
func ListAll(t *testing.T, o store.Origin, bucket string, opts store.ListOptions) []ListEntry {
	t.Helper()
	var all []ListEntry
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatalf("list %+v: no end after 1000 pages", opts)
		}
		p, err := o.List(opCtx(t), bucket, opts)
		if err != nil {
			t.Fatalf("List(%+v): %v", opts, err)
		}
		got := pageEntries(p)
		if max := opts.MaxKeys; max > 0 && len(got) > max {
			t.Fatalf("List(%+v) returned %d entries", opts, len(got))
		}
		all = append(all, got...)
		if !p.IsTruncated {
			return all
		}
		if len(got) == 0 || p.NextAfter != got[len(got)-1].name {
			t.Fatalf("List(%+v): truncated page %v with NextAfter %q", opts, got, p.NextAfter)
		}
		opts.After = p.NextAfter
	}
}

// assertKeys asserts that a full listing of bucket is exactly keys.
func assertKeys(t *testing.T, o store.Origin, bucket string, keys ...string) {
	t.Helper()
	got := ListAll(t, o, bucket, store.ListOptions{})
	want := ListModel(keys, store.ListOptions{})
	if !slices.Equal(got, want) {
		t.Fatalf("bucket %s lists %v, want %v", bucket, got, want)
	}
}

func testListOrder(t *testing.T, o store.Origin) {
	b := newBucket(t, o)
	infos := putKeys(t, o, b, listKeys)
	p, err := o.List(opCtx(t), b, store.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, obj := range p.Objects {
		got = append(got, obj.Key)
		want := infos[obj.Key]
		if obj.Size != want.Size || obj.ETag != want.ETag || obj.LastModified.IsZero() {
			t.Errorf("listed %s: size %d ETag %s mtime %v; put gave size %d ETag %s",
				obj.Key, obj.Size, obj.ETag, obj.LastModified, want.Size, want.ETag)
		}
	}
	want := []string{"a-b", "a.txt", "a/b", "a/c/d", "a/c/e", "a0", "b.txt", "b/x/y/z", "b0", "c d", "é/1"}
	if !slices.Equal(got, want) || p.IsTruncated || len(p.CommonPrefixes) != 0 {
		t.Fatalf("full listing = %v (truncated %v, prefixes %v), want %v", got, p.IsTruncated, p.CommonPrefixes, want)
	}
}

func testListDelimiter(t *testing.T, o store.Origin) {
	b := newBucket(t, o)
	putKeys(t, o, b, listKeys)
	for _, c := range []struct {
		prefix, delim string
		want          string
	}{
		{"", "/", "a-b a.txt a/(prefix) a0 b.txt b/(prefix) b0 c d é/(prefix)"},
		{"a/", "/", "a/b a/c/(prefix)"},
		{"a", "/", "a-b a.txt a/(prefix) a0"},
		{"a/c", "/", "a/c/(prefix)"},
		{"b/", "/", "b/x/(prefix)"},
		{"b/x/y/", "/", "b/x/y/z"},
		{"", "-", "a-(prefix) a.txt a/b a/c/d a/c/e a0 b.txt b/x/y/z b0 c d é/1"},
		{"nothing", "/", ""},
	} {
		opts := store.ListOptions{Prefix: c.prefix, Delimiter: c.delim}
		got := fmt.Sprint(ListAll(t, o, b, opts))
		if want := "[" + c.want + "]"; got != want {
			t.Errorf("List(prefix %q, delimiter %q) = %s, want %s", c.prefix, c.delim, got, want)
		}
	}
}

func testListAfter(t *testing.T, o store.Origin) {
	b := newBucket(t, o)
	putKeys(t, o, b, listKeys)
	for _, c := range []struct {
		prefix, delim, after string
		want                 string
	}{
		{"", "/", "a/", "a0 b.txt b/(prefix) b0 c d é/(prefix)"}, // the prefix and its keys are not repeated
		{"", "/", "a/bb", "a0 b.txt b/(prefix) b0 c d é/(prefix)"},
		{"", "", "a-b", "a.txt a/b a/c/d a/c/e a0 b.txt b/x/y/z b0 c d é/1"},
		{"", "", "a/c/d", "a/c/e a0 b.txt b/x/y/z b0 c d é/1"},
		{"", "", "a/c/", "a/c/d a/c/e a0 b.txt b/x/y/z b0 c d é/1"}, // no delimiter: After is just a string
		{"a/", "/", "a/c/", ""},
		{"a/", "/", "a/b", "a/c/(prefix)"},
		{"", "/", "é/", ""},
		{"", "", "zzz", "é/1"},
		{"", "", "é/1", ""},
	} {
		opts := store.ListOptions{Prefix: c.prefix, Delimiter: c.delim, After: c.after}
		got := fmt.Sprint(ListAll(t, o, b, opts))
		if want := "[" + c.want + "]"; got != want {
			t.Errorf("List(prefix %q, delimiter %q, after %q) = %s, want %s", c.prefix, c.delim, c.after, got, want)
		}
	}
}

// testListPaging pages through every combination with small pages and
// compares with the model: every ListEntry exactly once, in order.
func testListPaging(t *testing.T, o store.Origin) {
	b := newBucket(t, o)
	putKeys(t, o, b, listKeys)
	for _, prefix := range []string{"", "a", "a/", "a/c/", "b", "é", "zzz"} {
		for _, delim := range []string{"", "/", "-", "c/"} {
			for _, max := range []int{1, 2, 3, 0} {
				opts := store.ListOptions{Prefix: prefix, Delimiter: delim, MaxKeys: max}
				got := ListAll(t, o, b, opts)
				if want := ListModel(listKeys, opts); !slices.Equal(got, want) {
					t.Errorf("paging %+v: got %v, want %v", opts, got, want)
				}
			}
		}
	}
}

// testKeyAndPrefix puts "a" and "a/b". An object store holds both; a
// filesystem cannot, and must refuse the second with ErrInvalidKey and
// leave the first intact. Listings of such pairs are not checked: MinIO
// stores both but lists only "a" (its keys become directories on disk),
// so no origin can promise more than what the origin server does.
func testKeyAndPrefix(t *testing.T, o store.Origin) {
	b := newBucket(t, o)
	putBytes(t, o, b, "a", []byte("a"), store.ObjectMeta{})
	_, err := o.Put(opCtx(t), b, "a/b", strings.NewReader("a/b"), 3, store.ObjectMeta{})
	switch {
	case err == nil:
		if got, _ := getBytes(t, o, b, "a/b", store.ReadRange{Length: -1}); string(got) != "a/b" {
			t.Fatalf("Get(a/b) = %q", got)
		}
	case errors.Is(err, store.ErrInvalidKey):
		assertKeys(t, o, b, "a")
	default:
		t.Fatalf("Put(a/b) beside a = %v, want success or ErrInvalidKey", err)
	}
	if got, _ := getBytes(t, o, b, "a", store.ReadRange{Length: -1}); string(got) != "a" {
		t.Fatalf("Put(a/b) changed a: %q", got)
	}
}
