// Tests of scheduled warm-ups: specs checked at load, a short schedule
// fires, and a warm-up still running is not started again.
package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/granary-dev/granary/ops"
)

// fakeStarter records starts; a job stays running until finish.
type fakeStarter struct {
	mu      sync.Mutex
	started []ops.WarmSpec
	running map[string]bool
}

func (f *fakeStarter) StartWarm(_ context.Context, s ops.WarmSpec) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.started = append(f.started, s)
	id := fmt.Sprintf("w%d", len(f.started))
	f.running[id] = true
	return id, nil
}

func (f *fakeStarter) WarmStatus(id string) (ops.WarmStatus, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := ops.WarmStatus{ID: id, State: ops.WarmDone}
	if f.running[id] {
		st.State = ops.WarmRunning
	}
	_, ok := f.running[id]
	return st, ok
}

func (f *fakeStarter) starts() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.started)
}

func TestScheduledWarmFiresAndSkipsRunning(t *testing.T) {
	cfg := Defaults()
	cfg.Buckets = map[string]BucketConfig{"data": {Warm: []WarmSchedule{{Prefix: "train/", Schedule: "@every 1s", Parallel: 4}}}}
	f := &fakeStarter{running: map[string]bool{}}
	stop, err := startSchedules(cfg, f, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	waitFor(t, 5*time.Second, "the first scheduled warm-up", func() bool { return f.starts() >= 1 })
	time.Sleep(2500 * time.Millisecond) // two more ticks, the job still running
	if n := f.starts(); n != 1 {
		t.Fatalf("%d warm-ups started while the first was running, want 1", n)
	}
	f.mu.Lock()
	f.running["w1"] = false
	want := ops.WarmSpec{Bucket: "data", Prefix: "train/", Parallel: 4}
	if f.started[0] != want {
		t.Errorf("started %+v, want %+v", f.started[0], want)
	}
	f.mu.Unlock()
	waitFor(t, 5*time.Second, "the next warm-up once the first ended", func() bool { return f.starts() >= 2 })
}

func TestScheduleSpecsChecked(t *testing.T) {
	for _, bad := range []WarmSchedule{{Schedule: "every day"}, {Schedule: "61 * * * *"}, {Schedule: "@daily", Parallel: 1000}} {
		cfg := Defaults()
		cfg.Buckets = map[string]BucketConfig{"data": {Warm: []WarmSchedule{bad}}}
		if err := cfg.checkSchedules(); err == nil || !strings.Contains(err.Error(), "buckets.data.warm[0]") {
			t.Errorf("%+v: %v, want an error naming the entry", bad, err)
		}
	}
}

// waitFor polls cond every 20ms until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not happen within %v", what, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
