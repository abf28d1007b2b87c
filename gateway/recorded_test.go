// Each read counts one access in each tier it reaches, also when its
// chunk came with the object's metadata load: the admission policies
// compare those counts.
package gateway

import (
	"context"
	"io"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/disk"
	"github.com/granary-dev/granary/store/ram"
)

// countingTier counts the Gets (recorded accesses) of a RAM or disk tier
// per chunk; a Peek is not counted.
type countingTier struct {
	store.Tier
	mu   sync.Mutex
	gets map[store.ChunkID]int
}

func counting(t store.Tier) *countingTier {
	return &countingTier{Tier: t, gets: map[store.ChunkID]int{}}
}

func (c *countingTier) Get(id store.ChunkID) ([]byte, error) {
	c.mu.Lock()
	c.gets[id]++
	c.mu.Unlock()
	return c.Tier.Get(id)
}

func (c *countingTier) Peek(id store.ChunkID) ([]byte, error) {
	return c.Tier.(store.Peeker).Peek(id)
}

func (c *countingTier) PutAlways(id store.ChunkID, data []byte) error {
	return c.Tier.(store.Admitter).PutAlways(id, data)
}

func (c *countingTier) Versions(bucket, key string) []string {
	return c.Tier.(store.VersionLister).Versions(bucket, key)
}

func (c *countingTier) count(id store.ChunkID) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gets[id]
}

// TestEachReadRecordedOnce: a cold read of a two-chunk object counts one
// access of each chunk in RAM and on disk, chunk 0 included (it comes
// with the metadata load and asks no tier); a warm read, served from RAM,
// counts one more in RAM and none on disk.
func TestEachReadRecordedOnce(t *testing.T) {
	r := newRig(t, rigOptions{chunk: 64 << 10})
	const key, size = "two-chunks", 100 << 10
	r.seed(key, randBytes(t, size))
	d, err := disk.Open(disk.Options{Dir: t.TempDir(), Capacity: 64 << 20, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	rt, dt := counting(ram.New(ram.Options{Capacity: 64 << 20})), counting(d)
	e, err := New(Options{Origin: r.origin, ChunkSize: 64 << 10, Freshness: Freshness{Mode: Immutable},
		Logger: zerolog.Nop(), RAM: rt, Disk: dt})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var info store.ObjectInfo
	for read, want := range [][2]int{{1, 1}, {2, 1}} {
		obj, err := e.Get(context.Background(), r.bucket, key, GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if n, err := io.Copy(io.Discard, obj); err != nil || n != size {
			t.Fatalf("read %d: %d bytes, %v", read+1, n, err)
		}
		info = obj.Info
		obj.Close()
		awaitDiskFills(t, e)
		for idx := range int64(2) {
			id := e.chunkID(info, idx)
			if got := [2]int{rt.count(id), dt.count(id)}; got != want {
				t.Errorf("after read %d, chunk %d: %d accesses counted in RAM and %d on disk, want %d and %d",
					read+1, idx, got[0], got[1], want[0], want[1])
			}
		}
	}
}
