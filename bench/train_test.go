// Tests of the AU arithmetic and the training loop, on a fake clock: no
// sleeps, no timing assertions.
package bench

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"
)

func TestMeterAU(t *testing.T) {
	clk := newFakeClock()
	var m Meter
	t0 := clk.Now()
	for range 3 { // each batch: 10 ms waiting, then 90 ms computing
		if err := m.step(context.Background(), clk, 90*time.Millisecond, func() error {
			clk.advance(10 * time.Millisecond)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	m.Active = clk.Now().Sub(t0)
	if m.Compute != 270*time.Millisecond || m.Batches != 3 || m.Active != 300*time.Millisecond {
		t.Fatalf("meter %+v", m)
	}
	if got := pct(m.AU()); got != "90.0%" {
		t.Fatalf("AU %s, want 90.0%%", got)
	}
	if (Meter{}).AU() != 0 {
		t.Fatal("an idle meter has AU")
	}
	if got := MeanAU([]Meter{{Active: 100, Compute: 100}, {Active: 100, Compute: 50}}); got != 0.75 {
		t.Fatalf("mean AU %v, want 0.75", got)
	}
}

// smallSet is a manifest of files one-sample objects of size bytes,
// written to a fresh memStore.
func smallSet(t *testing.T, clk *fakeClock, lat time.Duration, files int) (*memStore, Manifest) {
	t.Helper()
	p, _ := Workload("unet3d")
	st := newMemStore(clk, lat)
	m, err := Gen(context.Background(), st, "ds", GenOptions{Profile: p, Files: files, SampleBytes: 1000, SampleStdev: 100}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return st, m
}

func TestTrainAUOnFakeClock(t *testing.T) {
	for _, tc := range []struct {
		name string
		lat  time.Duration
		want string
	}{
		{"instant store", 0, "100.0%"},
		// 8 samples, 2 batches of 4 at 40 ms: 80 ms of compute; 8 reads
		// at 5 ms: 40 ms; one reader, so the fake time is their sum.
		{"5 ms per read", 5 * time.Millisecond, "66.7%"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newFakeClock()
			st, m := smallSet(t, clk, tc.lat, 8)
			r, err := Train(context.Background(), st, TrainOptions{Manifest: m, Prefix: "ds", BatchSize: 4, Readers: 1,
				Prefetch: 1, Compute: 40 * time.Millisecond, Epochs: 1, Clock: clk}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := pct(r.AU); got != tc.want {
				t.Fatalf("AU %s, want %s", got, tc.want)
			}
			if r.Samples != 8 || r.Bytes != m.Bytes() || len(r.EpochSeconds) != 1 || r.Threshold != 0.90 {
				t.Fatalf("result %+v", r)
			}
			if r.Passed != (r.AU >= 0.90) {
				t.Fatalf("passed %v at AU %v", r.Passed, r.AU)
			}
			if tc.lat > 0 && (r.LatencyP50Ms != 5 || r.LatencyP99Ms != 5) {
				t.Fatalf("latency p50 %v p99 %v, want 5 ms", r.LatencyP50Ms, r.LatencyP99Ms)
			}
		})
	}
}

func TestTrainSplitsEpochsAcrossAccelerators(t *testing.T) {
	clk := newFakeClock()
	st, m := smallSet(t, clk, 0, 13)
	// 13 samples over 3 accelerators in batches of 2: 2 steps each, 12
	// samples an epoch, the 13th dropped.
	var c Counters
	r, err := Train(context.Background(), st, TrainOptions{Manifest: m, Prefix: "ds/", Accelerators: 3, BatchSize: 2,
		Readers: 2, Prefetch: 2, Compute: time.Millisecond, Epochs: 2, Clock: clk}, &c)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.totalReads(); got != 24 || r.Samples != 24 || c.Samples.Load() != 24 {
		t.Fatalf("reads %d, result %d samples, counters %d; want 24", got, r.Samples, c.Samples.Load())
	}
	for key, n := range st.reads {
		if n > 2 {
			t.Errorf("%s read %d times in 2 epochs", key, n)
		}
	}
	if len(r.AUPerAccelerator) != 3 || len(r.EpochSeconds) != 2 {
		t.Fatalf("result %+v", r)
	}
	// A second run on the same counters reports its own samples only.
	r2, err := Train(context.Background(), st, TrainOptions{Manifest: m, Prefix: "ds", Accelerators: 3, BatchSize: 2,
		Readers: 1, Compute: time.Millisecond, Epochs: 1, Clock: clk}, &c)
	if err != nil || r2.Samples != 12 {
		t.Fatalf("second run: %d samples, %v", r2.Samples, err)
	}
}

func TestTrainRefusesTooSmallASet(t *testing.T) {
	st, m := smallSet(t, newFakeClock(), 0, 4)
	_, err := Train(context.Background(), st, TrainOptions{Manifest: m, Accelerators: 2, BatchSize: 4, Clock: newFakeClock()}, nil)
	if err == nil || !strings.Contains(err.Error(), "no full batch") {
		t.Fatalf("err %v, want no full batch", err)
	}
}

func TestTrainDefaultsFromTheWorkload(t *testing.T) {
	m := Manifest{Workload: "unet3d", Scale: 1.0 / 32, Files: []File{{Key: "a", Samples: []int64{1}}}}
	o, err := TrainOptions{Manifest: m}.normalise()
	if err != nil {
		t.Fatal(err)
	}
	// MLPerf's unet3d on h100: batch 7, 4 read threads, 0.323 s per batch.
	want := time.Duration(math.Round(float64(323*time.Millisecond) / 32))
	if o.BatchSize != 7 || o.Readers != 4 || o.Compute != want || o.Threshold != 0.90 || o.Prefetch != 2 || o.Accelerators != 1 {
		t.Fatalf("options %+v", o)
	}
	if _, err := (TrainOptions{Manifest: m, AccelType: "tpu"}).normalise(); err == nil {
		t.Fatal("an unknown accelerator type was accepted")
	}
	custom := Manifest{Workload: "mine", Scale: 1, Files: m.Files}
	if _, err := (TrainOptions{Manifest: custom}).normalise(); err == nil {
		t.Fatal("an unknown workload ran without its batch size and compute time")
	}
	if _, err := (TrainOptions{Manifest: custom, BatchSize: 2, Readers: 1, Compute: time.Second, Threshold: 0.5}).normalise(); err != nil {
		t.Fatalf("a custom workload with every value given: %v", err)
	}
}

func TestRepeatSpread(t *testing.T) {
	rep := Repeat([]TrainResult{{AU: 0.90, Threshold: 0.9}, {AU: 0.94, Threshold: 0.9}, {AU: 0.92, Threshold: 0.9}})
	if math.Abs(rep.AU.Mean-0.92) > 1e-9 || rep.AU.Min != 0.90 || rep.AU.Max != 0.94 || math.Abs(rep.AU.Stdev-0.02) > 1e-9 || !rep.Passed {
		t.Fatalf("spread %+v", rep.AU)
	}
	var b strings.Builder
	rep.WriteSummary(&b)
	if !strings.Contains(b.String(), "AU 92.0% (min 90.0%, max 94.0%") || !strings.Contains(b.String(), "meets the 90.0% threshold") {
		t.Fatalf("summary:\n%s", b.String())
	}
}

// overrunClock's sleeps take half again as long as asked, as on a busy
// machine.
type overrunClock struct{ *fakeClock }

func (c overrunClock) Sleep(_ context.Context, d time.Duration) (time.Duration, error) {
	c.advance(d + d/2)
	return d + d/2, nil
}

func TestAnOverrunSleepIsStillCompute(t *testing.T) {
	clk := overrunClock{newFakeClock()}
	st, m := smallSet(t, clk.fakeClock, 0, 8)
	r, err := Train(context.Background(), st, TrainOptions{Manifest: m, Prefix: "ds", BatchSize: 4, Readers: 1,
		Compute: 40 * time.Millisecond, Epochs: 1, Clock: clk}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := pct(r.AU); got != "100.0%" || r.EpochSeconds[0] != 0.12 {
		t.Fatalf("AU %s, epoch %vs; want 100.0%% over 0.12s", got, r.EpochSeconds[0])
	}
}
