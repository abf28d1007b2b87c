// Reads RAM serves reach the disk tier's admission, sampled: one RAM hit
// in unseenEvery is reported as that many reads.
package gateway

import (
	"context"
	"io"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/granary-dev/granary/internal/poll"
	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/disk"
	"github.com/granary-dev/granary/store/ram"
)

// noteRecorder is a disk tier that records the reads reported to it.
type noteRecorder struct {
	store.Tier
	mu    sync.Mutex
	notes map[store.ChunkID]int64
}

func (n *noteRecorder) NoteReads(id store.ChunkID, k int64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.notes[id] += k
}

func TestRAMHitsReachTheDiskTier(t *testing.T) {
	r := newRig(t, rigOptions{})
	data := randBytes(t, 10<<10)
	r.seed("hot", data)
	d, err := disk.Open(disk.Options{Dir: t.TempDir(), Capacity: 64 << 20, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	rec := &noteRecorder{Tier: d, notes: map[store.ChunkID]int64{}}
	e, err := New(Options{Origin: r.origin, Freshness: Freshness{Mode: Immutable}, Logger: zerolog.Nop(),
		RAM: ram.New(ram.Options{Capacity: 64 << 20}), Disk: rec})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	read := func(i int) {
		obj, err := e.Get(context.Background(), r.bucket, "hot", GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(obj)
		obj.Close()
		if err != nil || len(got) != len(data) {
			t.Fatalf("read %d: %d bytes, %v", i, len(got), err)
		}
	}
	read(0) // a miss: its flight stores the chunk in RAM
	poll.Until(t, "the miss's flight to store the chunk", func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		return len(e.flights) == 0
	})
	const hits = 3 * unseenEvery
	for i := range hits {
		read(i + 1)
	}
	var total int64
	for id, n := range rec.notes {
		if id.Key != "hot" || id.Index != 0 {
			t.Errorf("reads noted for %v", id)
		}
		total += n
	}
	if total != hits {
		t.Fatalf("%d reads noted to the disk tier after %d RAM hits, want %d", total, hits, hits)
	}
}
