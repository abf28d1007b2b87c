// Tests of the parts store's listings (parts and uploads, paged, with
// prefixes and delimiters) and of concurrent use.
package parts

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/granary-dev/granary/store"
)

func TestListPartsPaging(t *testing.T) {
	s := openStore(t, t.TempDir(), true)
	id := newUpload(t, s, "k")
	var want []int
	for _, n := range rand.New(rand.NewPCG(1, 2)).Perm(60) {
		if n%3 == 0 {
			continue
		}
		putPart(t, s, "k", id, n+1, []byte(fmt.Sprint(n)))
		want = append(want, n+1)
	}
	slices.Sort(want)
	for _, limit := range []int{1, 2, 7, len(want) - 1, len(want), len(want) + 1} {
		var got []int
		after := 0
		for pages := 0; ; pages++ {
			if pages > len(want)+1 {
				t.Fatalf("MaxParts %d: paging does not end", limit)
			}
			p, err := s.ListParts("bkt", "k", id, store.PartListOptions{After: after, MaxParts: limit})
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Parts) > limit {
				t.Fatalf("MaxParts %d: page of %d", limit, len(p.Parts))
			}
			for _, part := range p.Parts {
				got = append(got, part.Number)
			}
			if !p.IsTruncated {
				break
			}
			if p.NextAfter != p.Parts[len(p.Parts)-1].Number {
				t.Fatalf("NextAfter %d, last part %d", p.NextAfter, p.Parts[len(p.Parts)-1].Number)
			}
			after = p.NextAfter
		}
		if !slices.Equal(got, want) {
			t.Fatalf("MaxParts %d: paged %v, want %v", limit, got, want)
		}
	}
	p, _ := s.ListParts("bkt", "k", id, store.PartListOptions{After: 30})
	if len(p.Parts) == 0 || p.Parts[0].Number <= 30 || p.IsTruncated {
		t.Fatalf("ListParts(After 30) = %+v", p)
	}
}

// entry is one line of an uploads listing: an upload or a common prefix.
type entry struct{ key, id string }

func pageEntries(p store.UploadPage) []entry {
	var out []entry
	for _, u := range p.Uploads {
		out = append(out, entry{u.Key, u.UploadID})
	}
	for _, cp := range p.CommonPrefixes {
		out = append(out, entry{cp, ""})
	}
	slices.SortFunc(out, func(a, b entry) int {
		return strings.Compare(a.key+"\x00"+a.id, b.key+"\x00"+b.id)
	})
	return out
}

func TestListUploads(t *testing.T) {
	s := openStore(t, t.TempDir(), true)
	ids := map[string][]string{}
	for _, key := range []string{"a/1", "b", "a/2", "b", "c/d/e", "a/1", "d", "b", "c/x",
		"photos/2024/jan", "photos/2025/feb", "photos/readme"} {
		ids[key] = append(ids[key], newUpload(t, s, key))
	}
	if _, err := s.Create("other", "b", store.ObjectMeta{}); err != nil {
		t.Fatal(err)
	}
	sealed := newUpload(t, s, "b")
	putPart(t, s, "b", sealed, 1, []byte("x"))
	a, err := s.Assemble("bkt", "b", sealed, []store.CompletePart{{Number: 1, ETag: md5Hex([]byte("x"))}})
	must(t, err)
	must(t, a.Seal())
	up := func(key string, i int) entry { return entry{key, ids[key][i]} }
	cp := func(p string) entry { return entry{p, ""} }
	cases := []struct {
		opts store.UploadListOptions
		want []entry
	}{
		{store.UploadListOptions{}, []entry{up("a/1", 0), up("a/1", 1), up("a/2", 0), up("b", 0), up("b", 1), up("b", 2),
			up("c/d/e", 0), up("c/x", 0), up("d", 0), up("photos/2024/jan", 0), up("photos/2025/feb", 0), up("photos/readme", 0)}},
		{store.UploadListOptions{Delimiter: "/"}, []entry{cp("a/"), up("b", 0), up("b", 1), up("b", 2), cp("c/"), up("d", 0), cp("photos/")}},
		{store.UploadListOptions{Prefix: "photos/", Delimiter: "/"}, []entry{cp("photos/2024/"), cp("photos/2025/"), up("photos/readme", 0)}},
		{store.UploadListOptions{Prefix: "c/"}, []entry{up("c/d/e", 0), up("c/x", 0)}},
		{store.UploadListOptions{Prefix: "a/", Delimiter: "1"}, []entry{cp("a/1"), up("a/2", 0)}},
		{store.UploadListOptions{KeyAfter: "b"}, []entry{up("c/d/e", 0), up("c/x", 0), up("d", 0),
			up("photos/2024/jan", 0), up("photos/2025/feb", 0), up("photos/readme", 0)}},
		{store.UploadListOptions{KeyAfter: "b", UploadIDAfter: ids["b"][0], Delimiter: "/"},
			[]entry{up("b", 1), up("b", 2), cp("c/"), up("d", 0), cp("photos/")}},
		{store.UploadListOptions{KeyAfter: "c/", Delimiter: "/"}, []entry{up("d", 0), cp("photos/")}},
		{store.UploadListOptions{KeyAfter: "c/a", Delimiter: "/"}, []entry{up("d", 0), cp("photos/")}},
		{store.UploadListOptions{Prefix: "zz"}, nil},
	}
	for _, c := range cases {
		c.opts.MaxUploads = 1000
		p, err := s.ListUploads("bkt", c.opts)
		if err != nil {
			t.Fatal(err)
		}
		want := slices.Clone(c.want)
		slices.SortFunc(want, func(a, b entry) int { return strings.Compare(a.key+"\x00"+a.id, b.key+"\x00"+b.id) })
		if got := pageEntries(p); !slices.Equal(got, want) || p.IsTruncated {
			t.Errorf("ListUploads(%+v) = %v (truncated %v), want %v", c.opts, got, p.IsTruncated, want)
		}
		for limit := 1; limit <= len(c.want)+1; limit++ {
			if got := pageThrough(t, s, c.opts, limit); !slices.Equal(got, c.want) {
				t.Errorf("ListUploads(%+v) by %d: %v, want %v", c.opts, limit, got, c.want)
			}
		}
	}
	p, _ := s.ListUploads("bkt", store.UploadListOptions{Prefix: "b"})
	for _, u := range p.Uploads {
		if u.UploadID == sealed {
			t.Fatal("sealed upload listed")
		}
		if u.Initiated.IsZero() {
			t.Fatalf("upload %+v has no initiation time", u)
		}
	}
}

// pageThrough lists with MaxUploads limit until the end, in listing order.
func pageThrough(t *testing.T, s *Store, opts store.UploadListOptions, limit int) []entry {
	t.Helper()
	opts.MaxUploads = limit
	var out []entry
	for pages := 0; ; pages++ {
		if pages > 100 {
			t.Fatalf("paging %+v does not end", opts)
		}
		p, err := s.ListUploads("bkt", opts)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(p.Uploads) + len(p.CommonPrefixes); n > limit || p.IsTruncated && n != limit {
			t.Fatalf("page of %d entries, limit %d, truncated %v", n, limit, p.IsTruncated)
		}
		out = append(out, pageEntries(p)...)
		if !p.IsTruncated {
			return out
		}
		opts.KeyAfter, opts.UploadIDAfter = p.NextKeyAfter, p.NextUploadIDAfter
	}
}

// TestConcurrentUse races part puts (same and different numbers),
// listings, completions that are closed again, and other uploads coming
// and going; every part left must read as its recorded ETag says.
func TestConcurrentUse(t *testing.T) {
	s := openStore(t, t.TempDir(), true)
	id := newUpload(t, s, "k")
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for i := range 30 {
				n := 1 + r.IntN(5)
				data := randBytes(uint64(w*100+i), 1+r.IntN(40<<10))
				if _, err := s.PutPart(ctx, "bkt", "k", id, n, strings.NewReader(string(data)), int64(len(data))); err != nil {
					t.Errorf("PutPart: %v", err)
					return
				}
			}
		})
	}
	wg.Go(func() {
		for range 40 {
			p, err := s.ListParts("bkt", "k", id, store.PartListOptions{})
			if err != nil || len(p.Parts) == 0 {
				continue
			}
			part := p.Parts[0]
			a, err := s.Assemble("bkt", "k", id, []store.CompletePart{{Number: part.Number, ETag: part.ETag}})
			if err == nil {
				a.Close()
			}
		}
	})
	wg.Go(func() {
		for i := range 40 {
			other, err := s.Create("bkt", fmt.Sprintf("o%d", i), store.ObjectMeta{})
			if err != nil {
				t.Error(err)
				return
			}
			s.ListUploads("bkt", store.UploadListOptions{Delimiter: "/"})
			if err := s.Abort("bkt", fmt.Sprintf("o%d", i), other); err != nil {
				t.Error(err)
			}
		}
	})
	wg.Wait()
	parts := listAllParts(t, s, "k", id)
	if len(parts) != 5 {
		t.Fatalf("%d parts, want 5", len(parts))
	}
	for _, p := range parts {
		a, err := s.Assemble("bkt", "k", id, []store.CompletePart{{Number: p.Number, ETag: p.ETag}})
		if err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, a); md5Hex(got) != p.ETag || int64(len(got)) != p.Size {
			t.Fatalf("part %d reads %d bytes with MD5 %s, recorded %+v", p.Number, len(got), md5Hex(got), p)
		}
		a.Close()
	}
	if names := dirNames(t, s, id); len(names) != 11 {
		t.Fatalf("upload dir holds %v, want upload.json and 5 data files and infos", names)
	}
	if p, _ := s.ListUploads("bkt", store.UploadListOptions{}); len(p.Uploads) != 1 {
		t.Fatalf("uploads left: %+v", p.Uploads)
	}
}
