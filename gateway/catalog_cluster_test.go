// Catalogs in a cluster: a member's catalog is kept true to changes made
// through another member (a write-through write and a delete through node
// 0 show in node 1's listing of a prefix its catalog covers; the
// cluster's freshness is immutable: without this the catalog would
// answer its old listing for good), and a member without a catalog of a
// prefix lists it from the member that has one, not the origin, writes
// through itself included.
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
	c.warmCatalog(1, "d/", "d/a", "d/b")
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
	if got := listed(); !slices.Equal(got, []string{"d/b", "d/new"}) {
		t.Fatalf("node 1 lists %v after a write and a delete through node 0, want [d/b d/new]", got)
	}
}

func TestClusterListsFromAMembersCatalog(t *testing.T) {
	c := newFakeCluster(t, fakeClusterOptions{n: 2, owners: 1, chunk: 64 << 10, catalog: true,
		modes: map[string]WriteMode{"rig": WriteThrough}})
	ctx := context.Background()
	rig := c.warmCatalog(1, "d/", "d/a")
	c.engines[0].refreshCovers(ctx)
	// Pages node 0 answered from a catalog: it has none of its own.
	lists := func() int { return int(testutil.ToFloat64(c.engines[0].m.listIndexed)) }
	listed := func(prefix string) []string {
		page, err := c.engines[0].List(ctx, c.bucket, store.ListOptions{Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, o := range page.Objects {
			keys = append(keys, o.Key)
		}
		return keys
	}
	if got := listed("d/"); !slices.Equal(got, []string{"d/a"}) || lists() != 1 {
		t.Fatalf("node 0 lists %v with %d asks of node 1's catalog, want [d/a] from it", got, lists())
	}
	data := []byte("written through node 0")
	if _, err := c.engines[0].Put(ctx, c.bucket, "d/new", bytes.NewReader(data), int64(len(data)), store.ObjectMeta{}); err != nil {
		t.Fatal(err)
	}
	if got := listed("d/"); !slices.Equal(got, []string{"d/a", "d/new"}) || lists() != 2 {
		t.Fatalf("node 0 lists %v right after its own write (%d asks), want [d/a d/new] from node 1's catalog", got, lists())
	}
	rig.seed("e/x", []byte("x"))
	if got := listed("e/"); !slices.Equal(got, []string{"e/x"}) || lists() != 2 {
		t.Fatalf("an uncovered prefix: %v, %d asks of node 1; want the origin's listing", got, lists())
	}
}

// warmCatalog seeds keys (each its own name as bytes) at the origin and
// loads engine i's catalog with prefix listing them, as a warm-up would;
// it returns the rig that seeded them.
func (c *fakeCluster) warmCatalog(i int, prefix string, keys ...string) *rig {
	c.t.Helper()
	rig := newRigFor(c.t, c)
	var entries []catalog.Entry
	for _, k := range keys {
		rig.seed(k, []byte(k))
		info, err := rig.origin.Stat(context.Background(), c.bucket, k)
		if err != nil {
			c.t.Fatal(err)
		}
		entries = append(entries, catalog.Entry{Key: k, Size: info.Size, ETag: info.ETag, LastModified: info.LastModified})
	}
	next := func() (catalog.Entry, bool, error) {
		if len(entries) == 0 {
			return catalog.Entry{}, false, nil
		}
		e := entries[0]
		entries = entries[1:]
		return e, true, nil
	}
	if err := c.engines[i].opts.Catalog.Load(c.bucket, prefix, time.Now(), next, nil); err != nil {
		c.t.Fatal(err)
	}
	return rig
}
