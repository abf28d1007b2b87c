// `bench train --find-max`: the most accelerators a store keeps at or
// above the workload's AU threshold, found by doubling then bisecting.
package bench

import (
	"context"
	"fmt"
	"io"
)

// Probe is one tried accelerator count.
type Probe struct {
	Accelerators int     `json:"accelerators"`
	AU           float64 `json:"au"`
	Passed       bool    `json:"passed"`
}

// MaxResult is what FindMax found: Max accelerators kept at or above
// Threshold (0 if even the first count fell short), every probe in the
// order tried, and the run at Max.
type MaxResult struct {
	Max       int          `json:"max_accelerators"`
	Threshold float64      `json:"au_threshold"`
	Capped    bool         `json:"capped"` // hi passed: the store may keep more
	Probes    []Probe      `json:"probes"`
	Best      *TrainResult `json:"best,omitempty"`
}

// FindMax searches [1, hi] for the largest count whose run passes,
// assuming AU falls as accelerators are added: it doubles from 1 until a
// run fails (or hi passes), then bisects between the last pass and the
// first failure. run runs n accelerators.
func FindMax(ctx context.Context, hi int, run func(ctx context.Context, n int) (TrainResult, error)) (MaxResult, error) {
	if hi < 1 {
		return MaxResult{}, fmt.Errorf("find-max: at most %d accelerators: none to try", hi)
	}
	var res MaxResult
	try := func(n int) (bool, error) {
		r, err := run(ctx, n)
		if err != nil {
			return false, err
		}
		res.Threshold = r.Threshold
		res.Probes = append(res.Probes, Probe{Accelerators: n, AU: r.AU, Passed: r.Passed})
		if r.Passed && n > res.Max {
			res.Max, res.Best = n, &r
		}
		return r.Passed, nil
	}
	pass, fail := 0, 0 // invariant: pass passed (or is 0), fail failed (or is 0: none yet)
	for n := 1; fail == 0; n = min(2*n, hi) {
		ok, err := try(n)
		if err != nil {
			return res, err
		}
		if !ok {
			fail = n
		} else if pass = n; n == hi {
			res.Capped = true
			return res, nil
		}
	}
	for fail-pass > 1 {
		mid := pass + (fail-pass)/2
		ok, err := try(mid)
		if err != nil {
			return res, err
		}
		if ok {
			pass = mid
		} else {
			fail = mid
		}
	}
	return res, nil
}

// WriteSummary prints the search and its answer.
func (r MaxResult) WriteSummary(w io.Writer) {
	fmt.Fprint(w, "find-max:")
	for _, p := range r.Probes {
		mark := "below"
		if p.Passed {
			mark = "ok"
		}
		fmt.Fprintf(w, " %d: AU %s (%s);", p.Accelerators, pct(p.AU), mark)
	}
	fmt.Fprintln(w)
	more := ""
	if r.Capped {
		more = " (the most tried; the store may keep more)"
	}
	fmt.Fprintf(w, "max accelerators at AU >= %s: %d%s\n", pct(r.Threshold), r.Max, more)
	if r.Best != nil {
		r.Best.WriteSummary(w)
	}
}
