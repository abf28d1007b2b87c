// The disk filler writes what it queues and drops what does not fit.
package gateway

import (
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"

	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/disk"
)

func TestDiskFillerWritesQueuedAndDropsOverflow(t *testing.T) {
	d, err := disk.Open(disk.Options{Dir: t.TempDir(), Capacity: 64 << 20, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	e := &Engine{log: zerolog.Nop()}
	f := newDiskFiller(e, d, 1<<20)
	small := store.ChunkID{Bucket: "b", Key: "small", ETag: "e"}
	big := store.ChunkID{Bucket: "b", Key: "big", ETag: "e"}
	f.enqueue(fillJob{id: small, data: make([]byte, 1000)})
	f.enqueue(fillJob{id: big, data: make([]byte, 2<<20)}) // over the 1 MiB queue bound
	f.close()
	f.enqueue(fillJob{id: store.ChunkID{Bucket: "b", Key: "late", ETag: "e"}, data: []byte("x")}) // after close: ignored, no panic

	if b, err := d.Get(small); err != nil || len(b) != 1000 {
		t.Fatalf("queued chunk not on disk: %d bytes, %v", len(b), err)
	}
	if _, err := d.Get(big); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("overflowing chunk: %v, want ErrNotFound", err)
	}
	if n := testutil.ToFloat64(f.dropped); n != 1 {
		t.Fatalf("dropped = %v, want 1", n)
	}
	if f.queued.Load() != 0 {
		t.Fatalf("queued bytes %d after close, want 0", f.queued.Load())
	}
}
