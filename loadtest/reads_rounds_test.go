// Tests of the CPU comparison's interleaved rounds: the median and its
// range, and the goal judged on the median rather than the single pair.
package main

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want float64
	}{{[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		in := append([]float64(nil), c.xs...)
		if got := median(c.xs); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.xs, got, c.want)
		}
		if !slices.Equal(in, c.xs) {
			t.Errorf("median reordered its input: %v, was %v", c.xs, in)
		}
	}
}

// TestCPUGoalJudgedOnTheRoundsMedian checks that where rounds ran, the
// CPU goal takes their median ratio (one dear round does not fail it, as
// the single pair does), and the rounds table shows median and range.
func TestCPUGoalJudgedOnTheRoundsMedian(t *testing.T) {
	pass := func(target string, cpu time.Duration) smallResult {
		return smallResult{set: "100KiB", conc: 64, target: target, n: 1000, elapsed: time.Second,
			cpu: cpuUse{server: 1000 * cpu, serverMeasured: true}}
	}
	pair := func(subj, ref time.Duration) cpuPair {
		return cpuPair{pass("granary round", subj), pass("nginx round", ref)}
	}
	rep := &report{plan: quickPlan(), quick: true, targets: localLineup(), small: []smallResult{
		pass("nginx cold", 300*time.Microsecond), pass("nginx warm", 30*time.Microsecond),
		pass(nginxSigned, 36*time.Microsecond), pass("granary cold", 200*time.Microsecond),
		pass("granary warm", 40*time.Microsecond), pass(granaryUnsigned, 27*time.Microsecond),
	}, rounds: []roundSet{{set: "100KiB", conc: 64,
		signed:   []cpuPair{pair(60*time.Microsecond, 40*time.Microsecond), pair(36*time.Microsecond, 40*time.Microsecond), pair(38*time.Microsecond, 40*time.Microsecond)},
		unsigned: []cpuPair{pair(30*time.Microsecond, 30*time.Microsecond), pair(33*time.Microsecond, 30*time.Microsecond), {}},
	}}}
	md := rep.markdown()
	for _, want := range []string{
		"| CPU per warm 100KiB GET, 64 clients, signed | 0.95x (0.90-1.50x; 38 against 40 µs), median of 3 rounds | ≤ 1.00x nginx read signed | yes |",
		"| 100KiB | 64 | 0.95x (0.90-1.50x; 38 against 40 µs) | 1.05x (1.00-1.10x; 32 against 30 µs) |",
		"| 100KiB | 64 | 1.11x (40 against 36 µs) | 0.90x (27 against 30 µs) |", // the single pairs stay
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	rep.rounds[0].signed = []cpuPair{pair(44*time.Microsecond, 40*time.Microsecond)}
	if want := "| 1.10x (1.10-1.10x; 44 against 40 µs), median of 1 rounds | ≤ 1.00x nginx read signed | **no** |"; !strings.Contains(rep.markdown(), want) {
		t.Errorf("report lacks %q", want)
	}
}
