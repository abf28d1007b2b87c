// LendFile: a chunk of a segment this process wrote is lent where it
// lies, its file open until the lease ends even if the segment is
// evicted; chunks of segments found at start and chunk files are not
// lent (a Get reads and checks them).
package disk

import (
	"errors"
	"io"
	"os"
	"syscall"
	"testing"

	"github.com/granary-dev/granary/store"
)

// mustLend lends id and checks that its file, its ReadAt and a ReadAt
// past its end give want.
func mustLend(t *testing.T, tier *Tier, id store.ChunkID, want []byte) store.FileChunk {
	t.Helper()
	c, n, err := tier.LendFile(id, true)
	if err != nil || n != int64(len(want)) {
		t.Fatalf("LendFile = %d, %v; want %d bytes", n, err, len(want))
	}
	fd, off := c.File()
	got := make([]byte, len(want))
	if m, err := syscall.Pread(int(fd), got, off); err != nil || m != len(want) || string(got) != string(want) {
		t.Fatalf("the file at the lent place: %d bytes, %v; not the chunk", m, err)
	}
	got = make([]byte, len(want)+10)
	if m, err := c.ReadAt(got, 7); m != len(want)-7 || err != io.EOF || string(got[:m]) != string(want[7:]) {
		t.Fatalf("ReadAt from 7 = %d, %v; want the chunk's %d last bytes and io.EOF", m, err, len(want)-7)
	}
	return c
}

func TestLendFile(t *testing.T) {
	dir := t.TempDir()
	opts := Options{Dir: dir, Capacity: 64 << 20, SegmentSize: 1 << 20, SmallMax: 256 << 10}
	tier := openT(t, opts)
	small, smallData := chunk("small", 0, 100<<10)
	large, largeData := chunk("large", 0, 512<<10) // a chunk file of its own
	mustPut(t, tier, small, smallData)
	mustPut(t, tier, large, largeData)
	mustLend(t, tier, small, smallData).Release()
	if _, _, err := tier.LendFile(large, true); !errors.Is(err, store.ErrNotLendable) {
		t.Fatalf("LendFile(a chunk file) = %v, want ErrNotLendable", err)
	}
	if _, _, err := tier.LendFile(store.ChunkID{Bucket: "b", Key: "none", ETag: "e1"}, true); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("LendFile(missing) = %v, want ErrNotFound", err)
	}
	if err := tier.Close(); err != nil {
		t.Fatal(err)
	}
	tier = openT(t, opts)
	if _, _, err := tier.LendFile(small, true); !errors.Is(err, store.ErrNotLendable) {
		t.Fatalf("LendFile(a chunk of a segment found at start) = %v, want ErrNotLendable", err)
	}
	mustGet(t, tier, small, smallData)
	again, againData := chunk("again", 0, 100<<10) // a new segment: lent
	mustPut(t, tier, again, againData)
	mustLend(t, tier, again, againData).Release()
}

// TestLendFileOutlivesEviction: the lent segment is evicted and unlinked
// only once the lease ends; its bytes stay readable until then.
func TestLendFileOutlivesEviction(t *testing.T) {
	tier := openT(t, Options{Dir: t.TempDir(), Capacity: 64 << 20})
	id, data := chunk("k", 0, 100<<10)
	mustPut(t, tier, id, data)
	loc := lookup(t, tier, id)
	c := mustLend(t, tier, id, data)
	tier.mu.Lock()
	victims, _ := tier.evictLocked(0, false, false)
	tier.mu.Unlock()
	tier.finishEvictions(victims)
	mustMiss(t, tier, id)
	got := make([]byte, len(data))
	if n, err := c.ReadAt(got, 0); err != nil || n != len(data) || string(got) != string(data) {
		t.Fatalf("ReadAt of an evicted segment still lent: %d, %v", n, err)
	}
	c.Release()
	c.Release() // a second Release changes nothing
	if _, err := os.Stat(tier.segPath(loc.Unit)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("segment still there after the lease ended: %v", err)
	}
}

// TestLendFileOutlivesClose: a segment lent when the tier closes stays
// open until its lease ends, and is closed then.
func TestLendFileOutlivesClose(t *testing.T) {
	tier := openT(t, Options{Dir: t.TempDir(), Capacity: 64 << 20})
	id, data := chunk("k", 0, 100<<10)
	mustPut(t, tier, id, data)
	c := mustLend(t, tier, id, data)
	if err := tier.Close(); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(data))
	if n, err := c.ReadAt(got, 0); err != nil || n != len(data) || string(got) != string(data) {
		t.Fatalf("ReadAt of a segment lent when the tier closed: %d, %v", n, err)
	}
	c.Release()
	if _, err := c.ReadAt(got, 0); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("ReadAt after the last lease ended = %v, want os.ErrClosed", err)
	}
}
