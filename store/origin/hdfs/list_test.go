// Tests of the listing walk against a fake directory tree: S3 order across
// nested directories, prefixes, delimiters, After and paging, compared
// with the reference model of the conformance suite.
package hdfs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/storetest"
)

var treeKeys = []string{
	"a-b", "a.txt", "a/b", "a/c/d", "a/c/e", "a0", "b.txt", "b/x/y/z", "b0", "c d", "é/1",
	"f/", "f/g", "h/", "deep/1/2/3/4/k", "x-y/z", "x/y-z",
}

// Empty directories, temp files and reserved names must never show.
var treeNoise = []string{"empty/", "a/c/empty/", "e/f/g/", ".granary-tmp-1234", "a/.granary-tmp-99", "b/.granary-folder-x"}

func fakeInfoFunc(key string, fi os.FileInfo) (store.ObjectInfo, error) {
	return objectInfo("b", key, fi, nil), nil
}

// listAllPages pages through listPage and checks the page invariants.
func listAllPages(t *testing.T, tree *fakeTree, opts store.ListOptions) []string {
	t.Helper()
	var all []string
	for pages := 0; ; pages++ {
		if pages > 100 {
			t.Fatalf("%+v: no end after 100 pages", opts)
		}
		p, err := listPage(context.Background(), tree, opts, fakeInfoFunc)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, o := range p.Objects {
			got = append(got, o.Key)
		}
		for _, cp := range p.CommonPrefixes {
			got = append(got, cp+"(prefix)")
		}
		slices.SortFunc(got, func(a, b string) int {
			return strings.Compare(strings.TrimSuffix(a, "(prefix)"), strings.TrimSuffix(b, "(prefix)"))
		})
		if opts.MaxKeys > 0 && len(got) > opts.MaxKeys {
			t.Fatalf("%+v: %d entries", opts, len(got))
		}
		all = append(all, got...)
		if !p.IsTruncated {
			return all
		}
		if len(got) == 0 || p.NextAfter != strings.TrimSuffix(got[len(got)-1], "(prefix)") {
			t.Fatalf("%+v: truncated page %v, NextAfter %q", opts, got, p.NextAfter)
		}
		opts.After = p.NextAfter
	}
}

func TestListMatchesModel(t *testing.T) {
	tree := newFakeTree(treeKeys, treeNoise...)
	for _, prefix := range []string{"", "a", "a/", "a/c", "b/x/", "f/", "deep/1/", "x", "zz", "é"} {
		for _, delim := range []string{"", "/", "-", "c", "/c/"} {
			for _, after := range []string{"", "a/b", "a/c/", "b", "f/", "x-y/z", "zzz"} {
				for _, max := range []int{0, 1, 2, 3} {
					opts := store.ListOptions{Prefix: prefix, Delimiter: delim, After: after, MaxKeys: max}
					got := fmt.Sprint(listAllPages(t, tree, opts))
					want := fmt.Sprint(storetest.ListModel(treeKeys, opts))
					if got != want {
						t.Fatalf("List(%+v) = %s, want %s", opts, got, want)
					}
				}
			}
		}
	}
}

func TestListInfoFromStatus(t *testing.T) {
	tree := newFakeTree([]string{"k"})
	p, err := listPage(context.Background(), tree, store.ListOptions{}, fakeInfoFunc)
	if err != nil || len(p.Objects) != 1 {
		t.Fatalf("page %+v, %v", p, err)
	}
	fi := tree.dirs[""][0]
	if o := p.Objects[0]; o.ETag != fileETag(fi) || o.Size != fi.Size() || !o.LastModified.Equal(fi.ModTime()) {
		t.Fatalf("listed %+v, want the status's ETag, size and mtime", o)
	}
}

// TestListSkipsDirectories checks that a page starting after a directory
// never reads it, and that a delimited listing rolls a directory up without
// reading more than needed to find one object.
func TestListSkipsDirectories(t *testing.T) {
	tree := newFakeTree(treeKeys, treeNoise...)
	if _, err := listPage(context.Background(), tree, store.ListOptions{After: "b0", MaxKeys: 1}, fakeInfoFunc); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"a/", "a/c/", "b/", "b/x/", "b/x/y/"} {
		if tree.reads[dir] != 0 {
			t.Errorf("listing after b0 read %s %d times", dir, tree.reads[dir])
		}
	}
	tree = newFakeTree(treeKeys, treeNoise...)
	p, err := listPage(context.Background(), tree, store.ListOptions{Delimiter: "/"}, fakeInfoFunc)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(p.CommonPrefixes, "empty/") || slices.Contains(p.CommonPrefixes, "e/") {
		t.Fatalf("empty directories listed as prefixes: %v", p.CommonPrefixes)
	}
	if tree.reads["a/c/"] != 0 {
		t.Errorf("rolling up a/ read a/c/ (a/b was enough)")
	}
}

func TestHasObject(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		keys, extra []string
		want        bool
	}{
		{nil, nil, false},
		{nil, []string{"x/", "y/z/", ".granary-tmp-1", "d/.granary-tmp-2"}, false},
		{[]string{"d/e/f"}, []string{"x/"}, true},
		{[]string{"folder/"}, nil, true},
	} {
		got, err := hasObject(ctx, newFakeTree(c.keys, c.extra...))
		if err != nil || got != c.want {
			t.Errorf("hasObject(%v + %v) = %v, %v; want %v", c.keys, c.extra, got, err, c.want)
		}
	}
}

// The infos of a page's keys (a namenode round trip each) are asked
// ahead, several at once: here each ask waits until four are in flight,
// which asks made one after another would never reach. The page is the
// same as ever.
func TestListAsksInfosAhead(t *testing.T) {
	var keys []string
	for i := range 40 {
		keys = append(keys, fmt.Sprintf("k%02d", i))
	}
	tree := newFakeTree(keys)
	var mu sync.Mutex
	inFlight, most := 0, 0
	four := make(chan struct{}) // closed once four are in flight at once
	info := func(key string, fi os.FileInfo) (store.ObjectInfo, error) {
		mu.Lock()
		inFlight++
		if inFlight == 4 && most < 4 {
			close(four)
		}
		most = max(most, inFlight)
		mu.Unlock()
		defer func() { mu.Lock(); inFlight--; mu.Unlock() }()
		select {
		case <-four:
		case <-time.After(time.Minute):
			return store.ObjectInfo{}, errors.New("asked one at a time: four never in flight")
		}
		return fakeInfoFunc(key, fi)
	}
	p, err := listPage(context.Background(), tree, store.ListOptions{MaxKeys: 30}, info)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range p.Objects {
		got = append(got, o.Key)
	}
	if !slices.Equal(got, keys[:30]) || !p.IsTruncated {
		t.Fatalf("page %v (truncated %v), want the first 30 keys", got, p.IsTruncated)
	}
	if most > listPrefetch {
		t.Fatalf("%d infos asked at once, more than %d", most, listPrefetch)
	}
}
