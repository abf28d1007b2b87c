// Tests of the find-max search and the checkpoint run on fakes.
package bench

import (
	"context"
	"errors"
	"math"
	"reflect"
	"testing"
	"time"
)

// model is a store that keeps cap accelerators fully busy: AU min(1,
// cap/n), threshold 0.9.
func model(cap float64, tried *[]int) func(context.Context, int) (TrainResult, error) {
	return func(_ context.Context, n int) (TrainResult, error) {
		*tried = append(*tried, n)
		au := min(1, cap/float64(n))
		return TrainResult{Accelerators: n, AU: au, Threshold: 0.9, Passed: au >= 0.9}, nil
	}
}

func TestFindMax(t *testing.T) {
	var tried []int
	r, err := FindMax(context.Background(), 64, model(10, &tried))
	if err != nil {
		t.Fatal(err)
	}
	// 10/n >= 0.9 up to n = 11: doubling fails at 16, bisection finds 11.
	if r.Max != 11 || r.Capped || r.Best == nil || r.Best.Accelerators != 11 || r.Threshold != 0.9 {
		t.Fatalf("result %+v", r)
	}
	if want := []int{1, 2, 4, 8, 16, 12, 10, 11}; !reflect.DeepEqual(tried, want) {
		t.Fatalf("tried %v, want %v", tried, want)
	}

	tried = nil
	if r, _ := FindMax(context.Background(), 6, model(10, &tried)); r.Max != 6 || !r.Capped || !reflect.DeepEqual(tried, []int{1, 2, 4, 6}) {
		t.Fatalf("capped: %+v after %v", r, tried)
	}
	tried = nil
	if r, _ := FindMax(context.Background(), 8, model(0.5, &tried)); r.Max != 0 || r.Best != nil || len(tried) != 1 {
		t.Fatalf("none passes: %+v after %v", r, tried)
	}
	boom := errors.New("boom")
	if _, err := FindMax(context.Background(), 8, func(context.Context, int) (TrainResult, error) { return TrainResult{}, boom }); !errors.Is(err, boom) {
		t.Fatalf("err %v", err)
	}
	if _, err := FindMax(context.Background(), 0, model(1, &tried)); err == nil {
		t.Fatal("hi 0 accepted")
	}
}

func TestCkptShardsAndRestores(t *testing.T) {
	clk := newFakeClock()
	st := newMemStore(clk, time.Second)
	m, _ := Model("llama3-8b")
	var c Counters
	r, err := Ckpt(context.Background(), st, "run1", CkptOptions{Model: m, Bytes: 1000, Ranks: 3, Clock: clk}, &c)
	if err != nil {
		t.Fatal(err)
	}
	sizes := []int{333, 333, 334}
	for i, want := range sizes {
		key := shardKey("run1", "llama3-8b", i)
		if got := len(st.objs[key]); got != want || st.reads[key] != 1 {
			t.Fatalf("%s: %d bytes, %d reads; want %d bytes read once", key, got, st.reads[key], want)
		}
	}
	// Three restores at 1 fake second each: 3 s, 1000 bytes.
	if r.Ranks != 3 || r.ShardBytes != 333 || r.RestoreSeconds != 3 || math.Abs(r.RestoreGBps-1000/3.0/1e9) > 1e-15 || c.Bytes.Load() != 2000 {
		t.Fatalf("result %+v, counted %d bytes", r, c.Bytes.Load())
	}
	// The defaults: MLPerf's 8 ranks, a hundredth of 105 GB.
	o, _ := CkptOptions{Model: m}.normalise()
	if o.Ranks != 8 || o.Bytes != 1.05e9 {
		t.Fatalf("defaults %+v", o)
	}
	if _, err := (CkptOptions{Model: m, Bytes: 2, Ranks: 3}).normalise(); err == nil {
		t.Fatal("fewer bytes than ranks accepted")
	}
}

func TestProfiles(t *testing.T) {
	for _, name := range Workloads() {
		p, err := Workload(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, acc := range []string{"a100", "H100"} {
			if d, err := p.ComputeFor(acc); err != nil || d <= 0 {
				t.Errorf("%s on %s: %v, %v", name, acc, d, err)
			}
		}
		if p.AUThreshold <= 0 || p.AUThreshold > 1 || p.Small.Scale <= 0 || p.Small.Files < 1 {
			t.Errorf("%s: %+v", name, p)
		}
	}
	if _, err := Workload("bert"); err == nil {
		t.Fatal("unknown workload found")
	}
	if _, err := Model("gpt5"); err == nil {
		t.Fatal("unknown model found")
	}
}
