// The presence filter: a lookup of an absent chunk opens no transaction,
// and no chunk the index holds is ever filtered out, across builds, a
// reopen and inserts racing a build.
package index

import (
	"fmt"
	"sync"
	"testing"

	"github.com/granary-dev/granary/internal/poll"
	"github.com/granary-dev/granary/store"
)

// built waits until d's first presence filter is in use.
func built(t *testing.T, d *DB) {
	t.Helper()
	poll.Until(t, "the presence filter's first build", func() bool {
		d.present.mu.RLock()
		defer d.present.mu.RUnlock()
		return d.present.cur != nil
	})
}

func presenceID(i int) store.ChunkID {
	return store.ChunkID{Bucket: "b", Key: fmt.Sprintf("k%d", i), ETag: "e", Index: int64(i % 3)}
}

// readTxs is how many lookups of d opened a transaction.
func readTxs(d *DB) int64 { return d.lookupTxs.Load() }

// lookupAll fails t unless every id in [from, to) is found.
func lookupAll(t *testing.T, d *DB, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if _, err := d.Lookup(presenceID(i)); err != nil {
			t.Fatalf("Lookup of indexed chunk %d: %v", i, err)
		}
	}
}

func TestPresenceSkipsTransactionsForAbsentChunks(t *testing.T) {
	d, path := openTest(t)
	built(t, d)
	const n = 500
	for i := range n {
		if _, err := d.Insert(presenceID(i), Location{Kind: InSegment, Unit: 1, Length: 10}, nil); err != nil {
			t.Fatal(err)
		}
	}
	lookupAll(t, d, 0, n)
	before := readTxs(d)
	for i := n; i < 2*n; i++ {
		if _, err := d.Lookup(presenceID(i)); err != store.ErrNotFound {
			t.Fatalf("Lookup of absent chunk %d: %v", i, err)
		}
	}
	// The filter's false positives (1% by design) still ask bbolt.
	if txs := readTxs(d) - before; txs > n/20 {
		t.Fatalf("%d lookups of absent chunks opened %d transactions", n, txs)
	}
	before = readTxs(d)
	lookupAll(t, d, 0, 10)
	if txs := readTxs(d) - before; txs != 10 {
		t.Fatalf("10 lookups of indexed chunks opened %d transactions", txs)
	}
	// Reopened, the filter is built from the file.
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d2, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	built(t, d2)
	lookupAll(t, d2, 0, n)
	before = readTxs(d2)
	for i := n; i < 2*n; i++ {
		d2.Lookup(presenceID(i))
	}
	if txs := readTxs(d2) - before; txs > n/20 {
		t.Fatalf("after a reopen, %d lookups of absent chunks opened %d transactions", n, txs)
	}
}

// TestPresenceKeepsEveryKeyAcrossBuilds: writers insert while builds
// start again and again; afterwards every chunk inserted is found and
// is in the filter in use.
func TestPresenceKeepsEveryKeyAcrossBuilds(t *testing.T) {
	d, _ := openTest(t)
	const writers, each = 4, 400
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w * each; i < (w+1)*each; i++ {
				if _, err := d.Insert(presenceID(i), Location{Kind: InSegment, Unit: 1, Length: 10}, nil); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	builds := 0
	for running := true; running; builds++ {
		select {
		case <-done:
			running = false
		default:
		}
		d.rebuildPresence()
		d.builds.Wait()
	}
	built(t, d)
	lookupAll(t, d, 0, writers*each)
	d.present.mu.RLock()
	defer d.present.mu.RUnlock()
	for i := range writers * each {
		if !d.present.cur.Test(ChunkKey(presenceID(i))) {
			t.Fatalf("chunk %d is indexed but not in the filter (after %d builds)", i, builds)
		}
	}
}

// TestPresenceBuildDuringAnInsert: a build whose snapshot is taken while
// an insert is between its first filter add and its commit (so the
// snapshot lacks the key, and the add went to the filter the build
// replaces) still ends with the key in the filter in use.
func TestPresenceBuildDuringAnInsert(t *testing.T) {
	d, _ := openTest(t)
	built(t, d)
	d.beforeCommit = func() {
		d.rebuildPresence()
		d.builds.Wait()
	}
	if _, err := d.Insert(presenceID(1), Location{Kind: InSegment, Unit: 1, Length: 10}, nil); err != nil {
		t.Fatal(err)
	}
	d.beforeCommit = nil
	lookupAll(t, d, 1, 2)
}
