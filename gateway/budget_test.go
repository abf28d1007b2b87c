// The working memory: a reader whose client stops taking bytes holds only
// what it paid for, a new read finds no room and fails with ErrBusy
// instead of holding more, every byte comes back once readers close, and
// a small object's first chunk is charged its length.
package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/granary-dev/granary/internal/poll"
	"github.com/granary-dev/granary/store"
)

func TestStalledReadersHoldTheWorkingMemory(t *testing.T) {
	const chunk = 64 << 10
	// AdmitWait short: the refusal, not the wait, is under test.
	r := newRig(t, rigOptions{chunk: chunk, workingMax: 2 * chunk, admitWait: 50 * time.Millisecond, fresh: Freshness{Mode: Immutable}})
	a, b := randBytes(t, 8*chunk), randBytes(t, 8*chunk)
	r.seed("a", a)
	r.seed("b", b)
	ctx := context.Background()
	// A client that takes a byte now and then, and stalls: its reader
	// keeps the chunk it sends (its flight's, then RAM's: free) and reads
	// ahead as far as the budget lets it.
	stalled, err := r.e.Get(ctx, r.bucket, "a", GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := io.ReadFull(stalled, make([]byte, 1)); err != nil {
			t.Fatal(err)
		}
		poll.Until(t, "the reader's flights to land", func() bool {
			r.e.mu.Lock()
			defer r.e.mu.Unlock()
			return len(r.e.flights) == 0
		})
	}
	if used := r.e.mem.used.Load(); used != 2*chunk {
		t.Fatalf("a reader with room to read ahead holds %d bytes, want %d", used, 2*chunk)
	}
	// Another read finds no room: it is refused before any byte.
	if obj, err := r.e.Get(ctx, r.bucket, "b", GetOptions{}); !errors.Is(err, ErrBusy) {
		if err == nil {
			obj.Close()
		}
		t.Fatalf("a read past the working memory: %v, want ErrBusy", err)
	}
	if got := r.e.mem.refused.Load(); got != 1 {
		t.Fatalf("%d refusals counted, want 1", got)
	}
	// The stalled client goes: everything it held comes back, and the
	// next read gets every byte.
	stalled.Close()
	poll.Until(t, "the working memory to be given back", func() bool { return r.e.mem.used.Load() == 0 })
	if got := r.read("b", nil); !bytes.Equal(got, b) {
		t.Fatal("wrong bytes after the budget came back")
	}
	poll.Until(t, "the working memory to be given back after a full read", func() bool { return r.e.mem.used.Load() == 0 })
}

// Cold reads of small objects in the air together cost one origin call
// each: the first chunk is charged its length once the origin has
// answered, so sixteen of them fit a budget of two chunk sizes. Charged
// ChunkSize up front, all but two would ask a Stat first and wait a
// second round trip for their bytes.
func TestConcurrentSmallMissesCostOneCallEach(t *testing.T) {
	g := &gatedOrigin{gate: make(chan struct{})}
	r := newRig(t, rigOptions{workingMax: 2 * DefaultChunkSize, admitWait: time.Minute, fresh: Freshness{Mode: Immutable},
		wrap: func(o store.Origin) store.Origin { g.Origin = o; return g }})
	const readers, size = 16, 64 << 10 // each body stops after 32 KiB until the gate opens
	want := make([][]byte, readers)
	for i := range want {
		want[i] = randBytes(t, size)
		r.seed(fmt.Sprintf("small-%02d", i), want[i])
	}
	got, errs := make([][]byte, readers), make([]error, readers)
	var wg sync.WaitGroup
	for i := range readers {
		wg.Go(func() {
			obj, err := r.e.Get(context.Background(), r.bucket, fmt.Sprintf("small-%02d", i), GetOptions{})
			if err != nil {
				errs[i] = err
				return
			}
			defer obj.Close()
			got[i], errs[i] = io.ReadAll(obj)
		})
	}
	poll.Until(t, "every read's first chunk in the air", func() bool {
		r.e.mu.Lock()
		defer r.e.mu.Unlock()
		return len(r.e.flights) == readers
	})
	close(g.gate)
	wg.Wait()
	for i := range readers {
		if errs[i] != nil || !bytes.Equal(got[i], want[i]) {
			t.Fatalf("read %d: %d bytes, err %v", i, len(got[i]), errs[i])
		}
	}
	if n := g.stats.Load(); n != 0 {
		t.Fatalf("%d of %d cold reads asked a Stat before their GET", n, readers)
	}
	poll.Until(t, "the working memory to be given back", func() bool { return r.e.mem.used.Load() == 0 })
}
