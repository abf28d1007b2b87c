// Tests of a disk budget shared by an owner's tier and a tier of hot
// copies: copies use the room the owner's tier leaves and give it back
// when owned chunks need it; together they never pass the budget; each
// keeps its chunks across a restart.
package disk

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/granary-dev/granary/store"
)

// sharedChunk is each test chunk's size: over SmallMax, so every chunk is
// a unit of its own and the budget counts whole chunks.
const sharedChunk = 4096

// sharedDirs are the directories of an owner's tier and a hot tier.
type sharedDirs struct{ owned, hot string }

// openShared opens the two tiers over one budget of n chunks.
func openShared(t *testing.T, dirs sharedDirs, n int) (owned, hot *Tier, s *Shared) {
	t.Helper()
	s = NewShared(int64(n) * sharedChunk)
	o := Options{Capacity: s.total, Policy: PolicyLRU, SmallMax: 1024, HighWater: 1, LowWater: 1, Shared: s}
	o.Dir = dirs.owned
	owned = openT(t, o)
	o.Dir, o.Yields = dirs.hot, true
	hot = openT(t, o)
	return owned, hot, s
}

// checkShared fails unless the tiers' usage sums to at most the budget,
// read under the budget's lock, where no reservation is half made.
func checkShared(t *testing.T, owned, hot *Tier, s *Shared) {
	t.Helper()
	s.mu.Lock()
	o, h := owned.used.Load(), hot.used.Load()
	s.mu.Unlock()
	if o+h > s.total {
		t.Fatalf("owned %d + hot %d bytes past the budget of %d", o, h, s.total)
	}
}

func putN(t *testing.T, tier *Tier, key string, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		id, data := chunk(key, i, sharedChunk)
		if err := tier.Put(id, data); err != nil {
			t.Fatalf("put %s/%d: %v", key, i, err)
		}
	}
}

// held counts the chunks key/from..to-1 the tier returns, checking their
// bytes.
func held(t *testing.T, tier *Tier, key string, from, to int) int {
	t.Helper()
	n := 0
	for i := from; i < to; i++ {
		id, want := chunk(key, i, sharedChunk)
		got, err := tier.Get(id)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			t.Fatalf("get %s/%d: %v", key, i, err)
		case !bytes.Equal(got, want):
			t.Fatalf("get %s/%d: wrong bytes", key, i)
		default:
			n++
		}
	}
	return n
}

func TestSharedDiskCopiesUseTheRoomOwnedChunksLeave(t *testing.T) {
	owned, hot, s := openShared(t, sharedDirs{t.TempDir(), t.TempDir()}, 10)
	putN(t, owned, "own", 0, 3)
	if c := hot.Stats().CapacityBytes; c != 7*sharedChunk {
		t.Fatalf("hot tier reports %d bytes of room, want the 7 chunks the owner's tier leaves", c)
	}
	putN(t, hot, "copy", 0, 9) // two more than the room: its own oldest go
	checkShared(t, owned, hot, s)
	if n := held(t, hot, "copy", 0, 9); n != 7 {
		t.Fatalf("hot tier holds %d copies, want the 7 the room allows", n)
	}
	if n := held(t, hot, "copy", 2, 9); n != 7 {
		t.Fatalf("hot tier holds %d of its 7 newest copies, want all (least recently used go first)", n)
	}
	if n := held(t, owned, "own", 0, 3); n != 3 {
		t.Fatalf("owner's tier holds %d of its 3 chunks after the copies came", n)
	}
}

func TestSharedDiskOwnedChunksTakeTheRoomBack(t *testing.T) {
	owned, hot, s := openShared(t, sharedDirs{t.TempDir(), t.TempDir()}, 10)
	putN(t, hot, "copy", 0, 10)
	checkShared(t, owned, hot, s)
	for i := range 10 {
		putN(t, owned, "own", i, i+1)
		checkShared(t, owned, hot, s)
	}
	if n := held(t, owned, "own", 0, 10); n != 10 {
		t.Fatalf("owner's tier holds %d of 10 chunks: copies must give way", n)
	}
	if n := held(t, hot, "copy", 0, 10); n != 0 {
		t.Fatalf("hot tier still holds %d copies in a budget owned chunks fill", n)
	}
	id, data := chunk("late", 0, sharedChunk)
	if err := hot.Put(id, data); !errors.Is(err, store.ErrNotAdmitted) {
		t.Fatalf("a copy into a budget owned chunks fill: %v, want it not admitted", err)
	}
	if err := hot.PutAlways(id, data); !errors.Is(err, store.ErrNotAdmitted) {
		t.Fatalf("a copy put past admission into a budget owned chunks fill: %v, want it not admitted", err)
	}
}

func TestSharedDiskNeverPassesTheBudgetUnderConcurrentPuts(t *testing.T) {
	owned, hot, s := openShared(t, sharedDirs{t.TempDir(), t.TempDir()}, 16)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var checks sync.WaitGroup
	checks.Add(1)
	go func() {
		defer checks.Done()
		for {
			select {
			case <-stop:
				return
			default:
				checkShared(t, owned, hot, s)
			}
		}
	}()
	for w := range 8 {
		tier, kind := owned, "own"
		if w%2 == 1 {
			tier, kind = hot, "copy"
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprintf("%s%d", kind, w)
			for i := range 40 {
				id, data := chunk(key, i, sharedChunk)
				if err := tier.Put(id, data); err != nil && !errors.Is(err, store.ErrNotAdmitted) {
					t.Errorf("put %s/%d: %v", key, i, err)
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	checks.Wait()
	checkShared(t, owned, hot, s)
}

func TestSharedDiskTiersKeepTheirChunksAcrossARestart(t *testing.T) {
	dirs := sharedDirs{t.TempDir(), t.TempDir()}
	owned, hot, _ := openShared(t, dirs, 10)
	putN(t, owned, "own", 0, 4)
	putN(t, hot, "copy", 0, 6)
	if err := hot.Close(); err != nil {
		t.Fatal(err)
	}
	if err := owned.Close(); err != nil {
		t.Fatal(err)
	}
	owned, hot, s := openShared(t, dirs, 10)
	if n, m := held(t, owned, "own", 0, 4), held(t, hot, "copy", 0, 6); n != 4 || m != 6 {
		t.Fatalf("after a restart the owner's tier holds %d of 4 chunks and the hot tier %d of 6 copies", n, m)
	}
	putN(t, owned, "own", 4, 10) // the copies are still the ones that give way
	checkShared(t, owned, hot, s)
	if n := held(t, owned, "own", 0, 10); n != 10 {
		t.Fatalf("owner's tier holds %d of 10 chunks after the restart", n)
	}
}
