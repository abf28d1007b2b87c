// The listing overlay against a reference model: pending puts listed,
// pending deletes hidden (with prefixes they empty), in every combination
// of prefix, delimiter and page size.
package writeback

import (
	"fmt"
	"slices"
	"testing"

	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/storetest"
)

func TestListOverlay(t *testing.T) {
	raw := s3Origin(t)
	b := newBucket(t, raw)
	atOrigin := []string{"a-b", "a.txt", "a/b", "a/c/d", "a/c/e", "a0", "b.txt", "b/x/y/z", "b0", "c d", "d/1", "d/2/3", "e"}
	for _, k := range atOrigin {
		put(t, raw, b, k, []byte("origin "+k))
	}
	g := newGate(raw, false)
	l := openLog(t, Options{Origin: g, WriteBack: always, Workers: 1})
	puts := []string{"0first", "a.txt", "a/c/f", "aa", "b/x/new", "d/", "f/g/h", "é"}
	deletes := []string{"a0", "d/1", "d/2/3", "b/x/y/z", "never-was", "e"}
	infos := map[string]store.ObjectInfo{}
	for _, k := range puts {
		infos[k] = put(t, l, b, k, []byte("staged "+k))
	}
	for _, k := range deletes {
		if err := l.Delete(testCtx(t), b, k); err != nil {
			t.Fatal(err)
		}
	}
	var want []string
	for _, k := range append(atOrigin, puts...) {
		if !slices.Contains(deletes, k) && !slices.Contains(want, k) {
			want = append(want, k)
		}
	}
	check := func(t *testing.T) {
		for _, prefix := range []string{"", "a", "a/", "b", "d", "d/", "zzz"} {
			for _, delim := range []string{"", "/", "-", "c/"} {
				for _, max := range []int{1, 2, 3, 0} {
					for _, after := range []string{"", "a/b", "a/c/", "b0"} {
						opts := store.ListOptions{Prefix: prefix, Delimiter: delim, MaxKeys: max, After: after}
						got := storetest.ListAll(t, l, b, opts)
						if w := storetest.ListModel(want, opts); !slices.Equal(got, w) {
							t.Fatalf("List(%+v) = %v, want %v", opts, got, w)
						}
					}
				}
			}
		}
	}
	check(t)
	page, err := l.List(testCtx(t), b, store.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range page.Objects {
		if in, ok := infos[obj.Key]; ok && (obj.ETag != in.ETag || obj.Size != in.Size || obj.LastModified.IsZero()) {
			t.Errorf("listed %+v, staged as %+v", obj, in)
		}
	}
	if l.Stats().DirtyObjects != len(puts)+len(deletes) {
		t.Fatalf("Stats = %+v: the overlay was not all pending", l.Stats())
	}

	g.Open()
	flush(t, l, b)
	t.Run("Landed", func(t *testing.T) { check(t) })
	if got, want := fmt.Sprint(storetest.ListAll(t, raw, b, store.ListOptions{})), fmt.Sprint(storetest.ListModel(want, store.ListOptions{})); got != want {
		t.Fatalf("origin lists %s, want %s", got, want)
	}
}
