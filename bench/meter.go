// The arithmetic of accelerator utilisation (AU): the share of an
// accelerator's time spent computing rather than waiting for data, as
// MLPerf Storage defines it, measured on an injectable clock.
package bench

import (
	"context"
	"math"
	"sort"
	"time"
)

// Clock is the time the benchmark runs on; tests give it a fake one.
type Clock interface {
	Now() time.Time
	// Sleep waits d (the simulated compute), or until ctx ends, and
	// returns how long it took: at least d, more when the machine is
	// busy.
	Sleep(ctx context.Context, d time.Duration) (time.Duration, error)
}

// RealClock is the wall clock.
type RealClock struct{}

func (RealClock) Now() time.Time { return time.Now() }

func (RealClock) Sleep(ctx context.Context, d time.Duration) (time.Duration, error) {
	start := time.Now()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return time.Since(start), nil
	case <-ctx.Done():
		return time.Since(start), ctx.Err()
	}
}

// Meter accumulates one accelerator's time. Invariant: Compute <=
// Active. Compute is the time the simulated compute took as its clock
// reports it: a sleep a busy machine overruns is still the accelerator
// busy, not waiting for data.
type Meter struct {
	Active  time.Duration // from each epoch's start to its last batch computed
	Compute time.Duration // the simulated compute
	Batches int
}

// AU is Compute / Active, 0 when nothing ran.
func (m Meter) AU() float64 {
	if m.Active <= 0 {
		return 0
	}
	return min(1, float64(m.Compute)/float64(m.Active))
}

// step runs one batch on clk: waits for it (next), then computes it (a
// sleep of d).
func (m *Meter) step(ctx context.Context, clk Clock, d time.Duration, next func() error) error {
	if err := next(); err != nil {
		return err
	}
	took, err := clk.Sleep(ctx, d)
	if err != nil {
		return err
	}
	m.Compute += took
	m.Batches++
	return nil
}

// MeanAU is the mean of the meters' AU (MLPerf's overall AU is the mean
// over the simulated accelerators).
func MeanAU(ms []Meter) float64 {
	if len(ms) == 0 {
		return 0
	}
	var s float64
	for _, m := range ms {
		s += m.AU()
	}
	return s / float64(len(ms))
}

// percentile is the q-th (0..1) of sorted by the nearest rank; 0 when
// empty.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func sortDurations(d []time.Duration) {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
}

// Spread summarises repeated measurements of one figure.
type Spread struct {
	Mean   float64 `json:"mean"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	Stdev  float64 `json:"stdev"` // sample standard deviation; 0 for one value
	Values int     `json:"n"`
}

// SpreadOf summarises xs.
func SpreadOf(xs []float64) Spread {
	if len(xs) == 0 {
		return Spread{}
	}
	s := Spread{Min: xs[0], Max: xs[0], Values: len(xs)}
	for _, x := range xs {
		s.Mean += x
		s.Min, s.Max = min(s.Min, x), max(s.Max, x)
	}
	s.Mean /= float64(len(xs))
	if len(xs) > 1 {
		var v float64
		for _, x := range xs {
			v += (x - s.Mean) * (x - s.Mean)
		}
		s.Stdev = math.Sqrt(v / float64(len(xs)-1))
	}
	return s
}
