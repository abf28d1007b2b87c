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

func TestSequentialInsertsNeverLinger(t *testing.T) {
	d, _ := openTest(t)
	insertN(t, d, 0, 300)
	if n := d.lingered.Load(); n != 0 {
		t.Fatalf("a writer alone waited for others %d times", n)
	}
	if d.Count() != 300 {
		t.Fatalf("Count = %d, want 300", d.Count())
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

func openPooled(t *testing.T, inserters int) *DB {
	t.Helper()
	d, err := Open(filepath.Join(t.TempDir(), "index.db"), Options{Inserters: inserters})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

func TestPooledInsertsLingerEvenAlone(t *testing.T) {
	d := openPooled(t, 4)
	insertN(t, d, 0, 20)
	if n := d.lingered.Load(); n != 20 {
		t.Fatalf("%d of 20 batches of a pool's inserts waited for the others, want all", n)
	}
	if d.Count() != 20 {
		t.Fatalf("Count = %d, want 20", d.Count())
	}
}

func TestPooledBatchCommitsOnceEveryInserterIsIn(t *testing.T) {
	const inserters, each = 4, 25
	d := openPooled(t, inserters)
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
	d2, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	if d2.Count() != 1 {
		t.Fatalf("Count after reopening = %d, want the lingering insert committed", d2.Count())
	}
}
