// Multipart conformance cases for listings: an upload's parts, and a
// bucket's uploads in progress with prefixes, delimiters, positions and
// paging, checked against a reference model.
package storetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/granary-dev/granary/store"
)

// mpListParts pages through five parts put in random order.
func mpListParts(t *testing.T, o store.Origin, mp store.Multipart) {
	b := newBucket(t, o)
	id := mpNew(t, mp, b, "k", store.ObjectMeta{})
	parts := make([]store.PartInfo, 5)
	for _, n := range []int{3, 1, 5, 2, 4} {
		parts[n-1] = mpPut(t, mp, b, "k", id, n, []byte(strings.Repeat("p", n*10)))
	}
	wantParts(t, mp, b, "k", id, parts...)
	for _, max := range []int{1, 2, 3, 5, 6} {
		got := mpAllParts(t, mp, b, "k", id, max)
		if len(got) != len(parts) {
			t.Errorf("ListParts by pages of %d: %d parts, want %d", max, len(got), len(parts))
		}
	}
	// Exact pages: S3 fills every page but the last.
	for _, c := range []struct {
		after, max int
		want       []int
		truncated  bool
	}{
		{0, 2, []int{1, 2}, true}, {2, 2, []int{3, 4}, true}, {4, 2, []int{5}, false},
		{3, 0, []int{4, 5}, false}, {5, 0, nil, false}, {0, 5, []int{1, 2, 3, 4, 5}, false},
	} {
		page, err := mp.ListParts(opCtx(t), b, "k", id, store.PartListOptions{After: c.after, MaxParts: c.max})
		if err != nil {
			t.Fatal(err)
		}
		var got []int
		for _, p := range page.Parts {
			got = append(got, p.Number)
		}
		if !slices.Equal(got, c.want) || page.IsTruncated != c.truncated ||
			c.truncated && page.NextAfter != c.want[len(c.want)-1] {
			t.Errorf("ListParts(after %d, max %d) = %v (truncated %v, next %d), want %v (truncated %v)",
				c.after, c.max, got, page.IsTruncated, page.NextAfter, c.want, c.truncated)
		}
	}
}

// upEntry is one item of an upload listing: an upload (key and ID) or a
// common prefix.
type upEntry struct {
	name, id string
	cp       bool
}

func (e upEntry) String() string {
	if e.cp {
		return e.name + "(prefix)"
	}
	return e.name + "#" + shortID(e.id)
}

// shortID is the end of an upload ID, for messages (MinIO's IDs share
// their beginning).
func shortID(id string) string { return id[max(0, len(id)-8):] }

// mpUploadSet starts uploads of several keys (two of one key), plus one
// aborted and one completed, which must not be listed. It returns those
// in progress in listing order: by key, then by initiation.
func mpUploadSet(t *testing.T, o store.Origin, mp store.Multipart) (string, []store.UploadInfo) {
	b := newBucket(t, o)
	ids := map[string]string{}
	for _, name := range []string{"c/d/e", "a/1", "b", "a/2", "a/1 again"} {
		key, _, _ := strings.Cut(name, " ")
		ids[name] = mpNew(t, mp, b, key, store.ObjectMeta{})
	}
	gone := mpNew(t, mp, b, "b", store.ObjectMeta{})
	if err := mp.AbortUpload(opCtx(t), b, "b", gone); err != nil {
		t.Fatalf("AbortUpload: %v", err)
	}
	done := mpNew(t, mp, b, "done", store.ObjectMeta{})
	mpComplete(t, mp, b, "done", done, mpPut(t, mp, b, "done", done, 1, []byte("done")))
	var want []store.UploadInfo
	for _, name := range []string{"a/1", "a/1 again", "a/2", "b", "c/d/e"} {
		key, _, _ := strings.Cut(name, " ")
		want = append(want, store.UploadInfo{Key: key, UploadID: ids[name]})
	}
	return b, want
}

// modelUploads is the reference: the entries a complete listing of
// uploads (in listing order) holds under opts (MaxUploads ignored).
func modelUploads(uploads []store.UploadInfo, opts store.UploadListOptions) []upEntry {
	var out []upEntry
	pastMarker := opts.UploadIDAfter == ""
	for _, u := range uploads {
		if u.Key == opts.KeyAfter && u.UploadID == opts.UploadIDAfter {
			pastMarker = true
			continue
		}
		if !strings.HasPrefix(u.Key, opts.Prefix) {
			continue
		}
		e := upEntry{name: u.Key, id: u.UploadID}
		if opts.Delimiter != "" {
			if i := strings.Index(u.Key[len(opts.Prefix):], opts.Delimiter); i >= 0 {
				e = upEntry{name: u.Key[:len(opts.Prefix)+i+len(opts.Delimiter)], cp: true}
			}
		}
		after := e.name > opts.KeyAfter || e.name == opts.KeyAfter && !e.cp && opts.UploadIDAfter != "" && pastMarker
		if !after || len(out) > 0 && e.cp && out[len(out)-1] == e {
			continue
		}
		out = append(out, e)
	}
	return out
}

// uploadPageEntries merges a page's uploads and common prefixes in
// listing order (uploads of one key keep the page's order).
func uploadPageEntries(t *testing.T, p store.UploadPage) []upEntry {
	t.Helper()
	var out []upEntry
	for _, u := range p.Uploads {
		if u.Initiated.IsZero() || u.UploadID == "" {
			t.Errorf("listed upload %+v: no ID or initiation time", u)
		}
		out = append(out, upEntry{name: u.Key, id: u.UploadID})
	}
	for _, cp := range p.CommonPrefixes {
		out = append(out, upEntry{name: cp, cp: true})
	}
	slices.SortStableFunc(out, func(a, b upEntry) int { return strings.Compare(a.name, b.name) })
	return out
}

// listUploadsAll pages through an upload listing with opts.MaxUploads per
// page, checking the page invariants, and returns every entry seen.
func listUploadsAll(t *testing.T, mp store.Multipart, bucket string, opts store.UploadListOptions) []upEntry {
	t.Helper()
	var all []upEntry
	for pages := 0; ; pages++ {
		if pages > 100 {
			t.Fatalf("ListUploads(%+v): no end after 100 pages", opts)
		}
		p, err := mp.ListUploads(opCtx(t), bucket, opts)
		if err != nil {
			t.Fatalf("ListUploads(%+v): %v", opts, err)
		}
		got := uploadPageEntries(t, p)
		if opts.MaxUploads > 0 && len(got) > opts.MaxUploads {
			t.Fatalf("ListUploads(%+v) returned %d entries", opts, len(got))
		}
		all = append(all, got...)
		if !p.IsTruncated {
			return all
		}
		if p.NextKeyAfter == "" {
			t.Fatalf("ListUploads(%+v): truncated page %v without a next position", opts, got)
		}
		opts.KeyAfter, opts.UploadIDAfter = p.NextKeyAfter, p.NextUploadIDAfter
	}
}

// mpListUploads lists uploads by prefix, delimiter and position.
func mpListUploads(t *testing.T, o store.Origin, mp store.Multipart) {
	b, uploads := mpUploadSet(t, o, mp)
	id := func(i int) string { return uploads[i].UploadID }
	for _, opts := range []store.UploadListOptions{
		{},
		{Delimiter: "/"},
		{Prefix: "a/1"}, // prefixes are whole keys: see the file comment of origin_multipart.go
		{Prefix: "b"},
		{Prefix: "c/d/e", Delimiter: "/"},
		{Prefix: "done"},
		{KeyAfter: "a/2"},
		{KeyAfter: "a/1"},
		{KeyAfter: "a/1", UploadIDAfter: id(0)},
		{KeyAfter: "a/1", UploadIDAfter: id(1)},
		{Delimiter: "/", KeyAfter: "a/"},
		{Delimiter: "/", KeyAfter: "b", UploadIDAfter: id(3)},
		{Prefix: "a/1", KeyAfter: "a/1", UploadIDAfter: id(0)},
		{KeyAfter: "zzz"},
	} {
		got := listUploadsAll(t, mp, b, opts)
		if want := modelUploads(uploads, opts); !slices.Equal(got, want) {
			t.Errorf("ListUploads(%+v) = %v, want %v", opts, got, want)
		}
	}
	// The model itself, on the plainest cases.
	if got := fmt.Sprint(modelUploads(uploads, store.UploadListOptions{Delimiter: "/"})); got != "[a/(prefix) b#"+shortID(id(3))+" c/(prefix)]" {
		t.Fatalf("model of a delimited listing = %s", got)
	}
}

// mpListUploadsPaging pages through every combination with small pages
// and compares with the model: every entry exactly once, in order.
func mpListUploadsPaging(t *testing.T, o store.Origin, mp store.Multipart) {
	b, uploads := mpUploadSet(t, o, mp)
	for _, prefix := range []string{"", "a/1"} {
		for _, delim := range []string{"", "/", "1"} {
			for _, max := range []int{1, 2, 3, 0} {
				opts := store.UploadListOptions{Prefix: prefix, Delimiter: delim, MaxUploads: max}
				got := listUploadsAll(t, mp, b, opts)
				if want := modelUploads(uploads, opts); !slices.Equal(got, want) {
					t.Errorf("paging %+v: got %v, want %v", opts, got, want)
				}
			}
		}
	}
}
