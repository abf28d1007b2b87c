// Group commit: inserts from concurrent writers linger to share a commit,
// a writer alone never waits unless the index was told of a pool of
// inserters, and every write is committed either way.
package index

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/granary-dev/granary/store"
)

func insertN(t *testing.T, d *DB, writer, n int) {
	for i := range n {
		id := store.ChunkID{Bucket: "b", Key: fmt.Sprintf("w%d/k%d", writer, i), ETag: "e"}
		if ok, err := d.Insert(id, Location{Kind: InSegment, Unit: 1, Length: 10}, nil); !ok || err != nil {
			t.Errorf("Insert %v = %v, %v", id, ok, err)
			return
		}
	}
}

// A writer alone never waits for others, unless the index was told its
// inserts come from a pool: then every batch waits for the rest of it.
func TestSequentialInsertsLingerOnlyInAPool(t *testing.T) {
	for _, c := range []struct {
		inserters   int
		wantLingers int64
	}{{0, 0}, {1, 0}, {4, 300}} {
		t.Run(fmt.Sprintf("inserters=%d", c.inserters), func(t *testing.T) {
			d, _ := openWith(t, Options{Inserters: c.inserters})
			insertN(t, d, 0, 300)
			if n := d.lingered.Load(); n != c.wantLingers {
				t.Fatalf("a writer alone waited for others %d times, want %d", n, c.wantLingers)
			}
			if d.Count() != 300 {
				t.Fatalf("Count = %d, want 300", d.Count())
			}
		})
	}
}

func TestConcurrentInsertsLinger(t *testing.T) {
	d, _ := openTest(t)
	const writers, each = 16, 100
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() { insertN(t, d, w, each) })
	}
	wg.Wait()
	if d.lingered.Load() == 0 {
		t.Error("no batch of 16 concurrent writers' inserts waited to share a commit")
	}
	if d.Count() != writers*each {
		t.Fatalf("Count = %d, want %d", d.Count(), writers*each)
	}
	// A removal among lingering inserts is committed too.
	var rm sync.WaitGroup
	rm.Go(func() { insertN(t, d, writers, each) })
	id := store.ChunkID{Bucket: "b", Key: "w0/k0", ETag: "e"}
	if ok, err := d.Remove(id, Location{Kind: InSegment, Unit: 1, Length: 10}); !ok || err != nil {
		t.Fatalf("Remove = %v, %v", ok, err)
	}
	rm.Wait()
	if d.Count() != (writers+1)*each-1 {
		t.Fatalf("Count = %d, want %d", d.Count(), (writers+1)*each-1)
	}
}

func TestPooledBatchCommitsOnceEveryInserterIsIn(t *testing.T) {
	const inserters, each = 4, 25
	d, _ := openWith(t, Options{Inserters: inserters})
	d.lingerFor = time.Hour // only a batch holding every inserter's insert commits before it
	done := make(chan struct{})
	go func() {
		defer close(done)
		var wg sync.WaitGroup
		for w := range inserters {
			wg.Go(func() { insertN(t, d, w, each) })
		}
		wg.Wait()
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("a batch holding one insert from each of the pool's inserters waited out its linger")
	}
	if d.Count() != inserters*each {
		t.Fatalf("Count = %d, want %d", d.Count(), inserters*each)
	}
}

func TestCloseCommitsALingeringBatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "index.db")
	d, err := Open(path, Options{Inserters: 4})
	if err != nil {
		t.Fatal(err)
	}
	d.lingerFor = time.Hour // the batch waits for three inserters that never come
	inserted := make(chan error, 1)
	go func() {
		id := store.ChunkID{Bucket: "b", Key: "k", ETag: "e"}
		_, err := d.Insert(id, Location{Kind: InSegment, Unit: 1, Length: 10}, nil)
		inserted <- err
	}()
	for deadline := time.Now().Add(time.Minute); d.lingered.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the insert's batch never started to wait")
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-inserted; err != nil {
		t.Fatalf("the lingering insert failed at Close: %v", err)
	}
	if d2 := reopen(t, path); d2.Count() != 1 {
		t.Fatalf("Count after reopening = %d, want the lingering insert committed", d2.Count())
	}
}
