// Requests' parent contexts: spread, and cancelled with the base.
package api

import (
	"context"
	"testing"
	"time"
)

func TestParentsSpreadAndCancelWithBase(t *testing.T) {
	base, cancel := context.WithCancel(context.Background())
	p := newParents(base)
	seen := map[context.Context]bool{}
	var reqs []context.Context
	for range 50 * parentCount {
		parent := p.pick()
		seen[parent] = true
		ctx, stop := context.WithCancel(parent)
		defer stop()
		reqs = append(reqs, ctx)
	}
	if len(seen) < parentCount/2 {
		t.Errorf("%d requests went to %d of %d parents", len(reqs), len(seen), parentCount)
	}
	for _, ctx := range reqs {
		if ctx.Err() != nil {
			t.Fatal("a request's context ended before the base")
		}
	}
	cancel()
	deadline := time.After(10 * time.Second)
	for i, ctx := range reqs {
		select { // cancellation reaches every request, whichever its parent
		case <-ctx.Done():
		case <-deadline:
			t.Fatalf("request %d not cancelled with the base", i)
		}
	}
}

// BenchmarkRequestContext: a request's cancelable context made and
// cancelled from every CPU at once, under one shared parent (as before)
// and under parents.
func BenchmarkRequestContext(b *testing.B) {
	base, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := newParents(base)
	for _, c := range []struct {
		name string
		pick func() context.Context
	}{{"one-parent", func() context.Context { return base }}, {"parents", p.pick}} {
		b.Run(c.name, func(b *testing.B) {
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					_, stop := context.WithCancel(c.pick())
					stop()
				}
			})
		})
	}
}
