// Tests of a budget shared by an owner's tier and a tier of hot copies:
// copies use the room the owner's tier leaves and give it back when owned
// chunks need it; together they never pass the budget.
package ram

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/granary-dev/granary/store"
)

// sharedPair is an owner's tier and a hot tier over one budget of n
// chunks of chunkBytes each (charged).
func sharedPair(t *testing.T, n int) (owned, hot *Tier, s *Shared) {
	s = NewShared(int64(n) * chargeOf(0))
	owned = New(Options{Capacity: s.total, Shared: s})
	hot = New(Options{Capacity: s.total, Shared: s, Yields: true})
	t.Cleanup(func() { owned.Close(); hot.Close() })
	return owned, hot, s
}

const chunkBytes = 4096

func sharedID(i int) store.ChunkID {
	return store.ChunkID{Bucket: "b", Key: fmt.Sprintf("k%04d", i), ETag: "e"}
}

// chargeOf is what chunk i costs the budget (every test ID has the same
// string lengths).
func chargeOf(i int) int64 { return charge(sharedID(i), make([]byte, chunkBytes)) }

func checkBudget(t *testing.T, owned, hot *Tier, s *Shared) {
	t.Helper()
	if u := s.used.Load(); u != owned.used.Load()+hot.used.Load() || u > s.total {
		t.Fatalf("shared used %d, tiers %d + %d, total %d", u, owned.used.Load(), hot.used.Load(), s.total)
	}
}

func TestSharedCopiesUseTheRoomOwnedChunksLeave(t *testing.T) {
	owned, hot, s := sharedPair(t, 10)
	for i := range 3 {
		if err := owned.Put(sharedID(i), make([]byte, chunkBytes)); err != nil {
			t.Fatal(err)
		}
	}
	if st := hot.Stats(); st.CapacityBytes != 7*chargeOf(0) {
		t.Fatalf("hot tier reports %d bytes of room, want the 7 chunks the owner's tier leaves", st.CapacityBytes)
	}
	for i := 100; i < 107; i++ { // far more than an eighth of the budget
		if err := hot.Put(sharedID(i), make([]byte, chunkBytes)); err != nil {
			t.Fatalf("hot copy %d with room left: %v", i-100, err)
		}
	}
	checkBudget(t, owned, hot, s)
	if err := hot.Put(sharedID(107), make([]byte, chunkBytes)); !errors.Is(err, store.ErrNotAdmitted) {
		t.Fatalf("a first-seen hot copy into a full budget: %v, want it not admitted", err)
	}
	if _, err := owned.Get(sharedID(0)); err != nil {
		t.Fatal("a hot copy displaced an owned chunk")
	}
}

func TestSharedOwnedChunksDisplaceCopies(t *testing.T) {
	owned, hot, s := sharedPair(t, 10)
	for i := 100; i < 110; i++ {
		if err := hot.Put(sharedID(i), make([]byte, chunkBytes)); err != nil {
			t.Fatal(err)
		}
	}
	// Owned chunks get the room, past admission, evicting copies in
	// their order (least recently used first).
	for i := range 4 {
		if err := owned.Put(sharedID(i), make([]byte, chunkBytes)); err != nil {
			t.Fatalf("owned chunk %d into a budget full of copies: %v", i, err)
		}
		checkBudget(t, owned, hot, s)
	}
	if got := hot.Stats().Chunks; got != 6 {
		t.Fatalf("hot tier holds %d copies, want 6 of 10 left", got)
	}
	for i := 100; i < 104; i++ {
		if _, err := hot.Peek(sharedID(i)); err == nil {
			t.Fatalf("copy %d, the oldest, survived", i-100)
		}
	}
	// Owned chunks fill the whole budget: no copy is left, and the owner
	// then evicts its own.
	for i := 4; i < 12; i++ {
		if err := owned.PutAlways(sharedID(i), make([]byte, chunkBytes)); err != nil {
			t.Fatal(err)
		}
	}
	if hot.Stats().Chunks != 0 || owned.Stats().Chunks != 10 || owned.Stats().CapacityBytes != s.total {
		t.Fatalf("owned %+v, hot %+v; want the budget all owned", owned.Stats(), hot.Stats())
	}
	checkBudget(t, owned, hot, s)
}

func TestSharedBudgetHoldsUnderConcurrency(t *testing.T) {
	owned, hot, s := sharedPair(t, 16)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				id := sharedID(w*1000 + i)
				if w%2 == 0 {
					owned.PutAlways(id, make([]byte, chunkBytes))
				} else {
					hot.PutAlways(id, make([]byte, chunkBytes))
				}
				if i%7 == 0 {
					owned.DeleteObject(id.Bucket, sharedID(w*1000+i-3).Key)
				}
				if u := s.used.Load(); u > s.total {
					t.Errorf("shared used %d past its total %d", u, s.total)
					return
				}
			}
		}()
	}
	wg.Wait()
	checkBudget(t, owned, hot, s)
	owned.Close()
	hot.Close()
	if s.used.Load() != 0 {
		t.Fatalf("closed tiers leave %d bytes charged", s.used.Load())
	}
}
