// Background work yields to clients: units run freely while clients are
// quiet, one at a time with a rest after each while they are busy, and
// every unit runs.
package gateway

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// runUnits runs n background units at once, each taking about d, and
// returns the most that ran at the same time.
func runUnits(e *Engine, n int, d time.Duration) int64 {
	var running, most atomic.Int64
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.background(context.Background(), func() {
				now := running.Add(1)
				for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
				}
				time.Sleep(d)
				running.Add(-1)
			})
		}()
	}
	wg.Wait()
	return most.Load()
}

func TestBackgroundYieldsToClients(t *testing.T) {
	// Quiet: two units run at once (each waits, up to a generous bound,
	// for the other to start).
	var quiet Engine
	var started sync.WaitGroup
	started.Add(2)
	both := make(chan struct{})
	go func() { started.Wait(); close(both) }()
	var overlapped atomic.Int64
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			quiet.background(context.Background(), func() {
				started.Done()
				select {
				case <-both:
					overlapped.Add(1)
				case <-time.After(30 * time.Second):
				}
			})
		}()
	}
	wg.Wait()
	if overlapped.Load() != 2 {
		t.Fatal("clients quiet: background units did not run at once")
	}

	var busy Engine
	busy.reading.Add(1) // a client streams an object
	start := time.Now()
	if most := runUnits(&busy, 3, 5*time.Millisecond); most != 1 {
		t.Fatalf("clients busy: %d units ran at once, want one at a time", most)
	}
	// Each unit rests bgShare-1 times its length: three units of at least
	// 5 ms took at least 3 x 5 ms x bgShare (a lower bound sleeps give).
	if took, least := time.Since(start), 3*5*time.Millisecond*bgShare; took < least {
		t.Fatalf("clients busy: three units took %v, less than their rests allow (%v)", took, least)
	}

	var asked Engine
	asked.clientGet() // a GET just now: busy for clientQuiet
	if !asked.clientsBusy() {
		t.Fatal("a GET just now does not count as a busy client")
	}
	asked.y.lastGet.Store(time.Now().Add(-2 * clientQuiet).UnixNano())
	if asked.clientsBusy() {
		t.Fatal("clients still busy after clientQuiet without a GET")
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ran := false
	busy.background(ctx, func() { ran = true }) // an ended fill still runs its unit, skips the rest
	if !ran {
		t.Fatal("a unit did not run")
	}
}
