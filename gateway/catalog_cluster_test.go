// A member's catalog kept true to changes made through another member: a
// write-through write and a delete through node 0 show in node 1's
// listing of a prefix its catalog covers (the cluster's freshness is
// immutable: without this the catalog would answer its old listing for
// good).
package gateway

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/catalog"
)

func TestClusterCatalogFollowsMembersWrites(t *testing.T) {
	c := newFakeCluster(t, fakeClusterOptions{n: 2, owners: 1, chunk: 64 << 10, catalog: true,
		modes: map[string]WriteMode{"rig": WriteThrough}})
	ctx := context.Background()
	rig := newRigFor(t, c)
	var entries []catalog.Entry
	for _, k := range []string{"d/a", "d/b"} {
		rig.seed(k, []byte(k))
		info, err := rig.origin.Stat(ctx, c.bucket, k)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, catalog.Entry{Key: k, Size: info.Size, ETag: info.ETag, LastModified: info.LastModified})
	}
	cat := c.engines[1].opts.Catalog
	next := func() (catalog.Entry, bool, error) {
		if len(entries) == 0 {
			return catalog.Entry{}, false, nil
		}
		e := entries[0]
		entries = entries[1:]
		return e, true, nil
	}
	if err := cat.Load(c.bucket, "d/", time.Now(), next, nil); err != nil {
		t.Fatal(err)
	}
	listed := func() []string {
		before := testutil.ToFloat64(c.engines[1].m.listIndexed)
		page, err := c.engines[1].List(ctx, c.bucket, store.ListOptions{Prefix: "d/"})
		if err != nil {
			t.Fatal(err)
		}
		if testutil.ToFloat64(c.engines[1].m.listIndexed) != before+1 {
			t.Fatal("node 1's listing did not come from its catalog")
		}
		var keys []string
		for _, o := range page.Objects {
			keys = append(keys, o.Key)
		}
		return keys
	}
	if got := listed(); !slices.Equal(got, []string{"d/a", "d/b"}) {
		t.Fatalf("node 1 lists %v before the changes", got)
	}
	data := []byte("new through node 0")
	if _, err := c.engines[0].Put(ctx, c.bucket, "d/new", bytes.NewReader(data), int64(len(data)), store.ObjectMeta{}); err != nil {
		t.Fatal(err)
	}
	if err := c.engines[0].Delete(ctx, c.bucket, "d/a"); err != nil {
		t.Fatal(err)
	}
	c.engines[1].fills.Wait() // the lookups the forgets started
	if got := listed(); !slices.Equal(got, []string{"d/b", "d/new"}) {
		t.Fatalf("node 1 lists %v after a write and a delete through node 0, want [d/b d/new]", got)
	}
}
