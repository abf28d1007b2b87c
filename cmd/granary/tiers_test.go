// Tests of a node's tiers: in a cluster, hot copies get a disk tier of
// their own beside the owned chunks', sharing its budget; a node that
// leaves the cluster drops them.
package main

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/rs/zerolog"

	"github.com/granary-dev/granary/store"
)

func TestClusterNodeKeepsHotCopiesOnDiskAndDropsThemAlone(t *testing.T) {
	cfg := Defaults()
	cfg.DataDir, cfg.RAM, cfg.Disk = t.TempDir(), 64<<20, 64<<20
	hotDir := filepath.Join(cfg.DataDir, "cache", "hot-"+strconv.FormatInt(int64(cfg.ChunkSize), 10))
	open := func(clustered bool) (nodeTiers, func()) {
		n := &node{}
		ts, err := openTiers(cfg, nil, clustered, n, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		return ts, func() {
			for _, c := range n.closers {
				c.Close()
			}
		}
	}
	ts, closeAll := open(true)
	if ts.hot == nil || ts.hotDisk == nil {
		t.Fatalf("a cluster node's hot tiers: RAM %v, disk %v; want both", ts.hot, ts.hotDisk)
	}
	id := store.ChunkID{Bucket: "b", Key: "k", ETag: "e"}
	if err := ts.hotDisk.Put(id, make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	if err := ts.disk.Put(store.ChunkID{Bucket: "b", Key: "own", ETag: "e"}, make([]byte, 63<<20+512<<10)); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.hotDisk.Get(id); err == nil {
		t.Fatal("a hot copy kept its room on disk when an owned chunk needed it")
	}
	if err := ts.hotDisk.Put(id, make([]byte, 1<<20)); !errors.Is(err, store.ErrNotAdmitted) {
		t.Fatalf("a hot copy into the room owned chunks hold: %v, want it not admitted", err)
	}
	if _, err := os.Stat(hotDir); err != nil {
		t.Fatalf("hot copies' directory: %v", err)
	}
	closeAll()
	alone, closeAlone := open(false)
	defer closeAlone()
	if alone.hot != nil || alone.hotDisk != nil {
		t.Fatal("a node alone has hot tiers")
	}
	if _, err := os.Stat(hotDir); !os.IsNotExist(err) {
		t.Fatalf("a node alone kept the hot copies of its cluster days: %v", err)
	}
}
