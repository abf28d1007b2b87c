// What a training run reports: the JSON result for programs and the
// one-screen summary for people, AU named as a percentage.
package bench

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// TrainResult is one training run's outcome.
type TrainResult struct {
	Workload         string    `json:"workload"`
	AccelType        string    `json:"accelerator_type"`
	Accelerators     int       `json:"accelerators"`
	BatchSize        int       `json:"batch_size"`
	Readers          int       `json:"readers"`
	Prefetch         int       `json:"prefetch"`
	ComputeMs        float64   `json:"compute_ms_per_batch"`
	Epochs           int       `json:"epochs"`
	Threshold        float64   `json:"au_threshold"`
	AU               float64   `json:"au"` // mean over accelerators, 0..1
	AUPerAccelerator []float64 `json:"au_per_accelerator"`
	Passed           bool      `json:"passed"` // AU >= Threshold
	Samples          int64     `json:"samples"`
	Bytes            int64     `json:"bytes"`
	Seconds          float64   `json:"seconds"`
	SamplesPerSec    float64   `json:"samples_per_s"`
	MBPerSec         float64   `json:"mb_per_s"` // 10^6 bytes
	LatencyP50Ms     float64   `json:"read_latency_p50_ms"`
	LatencyP99Ms     float64   `json:"read_latency_p99_ms"`
	EpochSeconds     []float64 `json:"epoch_seconds"`
}

// result turns the finished run into a TrainResult.
func (t *trainer) result(took time.Duration, epochs []time.Duration) TrainResult {
	o := t.o
	r := TrainResult{Workload: o.Manifest.Workload, AccelType: o.AccelType, Accelerators: o.Accelerators,
		BatchSize: o.BatchSize, Readers: o.Readers, Prefetch: o.Prefetch, ComputeMs: ms(o.Compute),
		Epochs: o.Epochs, Threshold: o.Threshold, AU: MeanAU(t.meters),
		Samples: t.c.Samples.Load() - t.samples0, Bytes: t.c.Bytes.Load() - t.bytes0, Seconds: took.Seconds()}
	for _, m := range t.meters {
		r.AUPerAccelerator = append(r.AUPerAccelerator, m.AU())
	}
	r.Passed = r.AU >= r.Threshold
	if s := took.Seconds(); s > 0 {
		r.SamplesPerSec = float64(r.Samples) / s
		r.MBPerSec = float64(r.Bytes) / s / 1e6
	}
	sortDurations(t.lat)
	r.LatencyP50Ms, r.LatencyP99Ms = ms(percentile(t.lat, 0.50)), ms(percentile(t.lat, 0.99))
	for _, e := range epochs {
		r.EpochSeconds = append(r.EpochSeconds, e.Seconds())
	}
	return r
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// pct renders a 0..1 share as "93.4%".
func pct(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) }

// verdict names the threshold and whether au meets it.
func verdict(au, threshold float64) string {
	if au >= threshold {
		return "meets the " + pct(threshold) + " threshold"
	}
	return "below the " + pct(threshold) + " threshold"
}

// WriteSummary prints r for people, in at most a screen.
func (r TrainResult) WriteSummary(w io.Writer) {
	epochs := "epochs"
	if r.Epochs == 1 {
		epochs = "epoch"
	}
	fmt.Fprintf(w, "%s on %d x %s (batch %d, %.1f ms compute per batch, %d readers x %d prefetch, %d %s)\n",
		r.Workload, r.Accelerators, r.AccelType, r.BatchSize, r.ComputeMs, r.Readers, r.Prefetch, r.Epochs, epochs)
	fmt.Fprintf(w, "  AU %s: %s\n", pct(r.AU), verdict(r.AU, r.Threshold))
	per := make([]string, len(r.AUPerAccelerator))
	for i, a := range r.AUPerAccelerator {
		per[i] = pct(a)
	}
	if len(per) > 16 {
		per = append(per[:16], fmt.Sprintf("... (%d more)", len(r.AUPerAccelerator)-16))
	}
	fmt.Fprintf(w, "  per accelerator: %s\n", strings.Join(per, " "))
	fmt.Fprintf(w, "  %.0f samples/s, %.1f MB/s, read latency p50 %.2f ms, p99 %.2f ms\n",
		r.SamplesPerSec, r.MBPerSec, r.LatencyP50Ms, r.LatencyP99Ms)
	ep := make([]string, len(r.EpochSeconds))
	for i, s := range r.EpochSeconds {
		ep[i] = fmt.Sprintf("%.2fs", s)
	}
	fmt.Fprintf(w, "  epochs: %s; %d samples, %.1f MB in %.2fs\n", strings.Join(ep, " "), r.Samples, float64(r.Bytes)/1e6, r.Seconds)
}

// Repeated is a training run made several times, with the spread of
// its figures: the run-to-run noise a comparison must exceed.
type Repeated struct {
	Runs          []TrainResult `json:"runs"`
	AU            Spread        `json:"au"`
	SamplesPerSec Spread        `json:"samples_per_s"`
	MBPerSec      Spread        `json:"mb_per_s"`
	Passed        bool          `json:"passed"` // the mean AU meets the threshold
}

// Repeat summarises runs of one configuration (at least one).
func Repeat(runs []TrainResult) Repeated {
	var au, sps, mbs []float64
	for _, r := range runs {
		au, sps, mbs = append(au, r.AU), append(sps, r.SamplesPerSec), append(mbs, r.MBPerSec)
	}
	rep := Repeated{Runs: runs, AU: SpreadOf(au), SamplesPerSec: SpreadOf(sps), MBPerSec: SpreadOf(mbs)}
	rep.Passed = len(runs) > 0 && rep.AU.Mean >= runs[0].Threshold
	return rep
}

// WriteSummary prints the last run's summary and, for several runs, the
// spread.
func (r Repeated) WriteSummary(w io.Writer) {
	if len(r.Runs) == 0 {
		return
	}
	last := r.Runs[len(r.Runs)-1]
	if len(r.Runs) == 1 {
		last.WriteSummary(w)
		return
	}
	fmt.Fprintf(w, "%s on %d x %s, %d runs:\n", last.Workload, last.Accelerators, last.AccelType, len(r.Runs))
	fmt.Fprintf(w, "  AU %s (min %s, max %s, stdev %.1f points): %s\n", pct(r.AU.Mean), pct(r.AU.Min), pct(r.AU.Max),
		100*r.AU.Stdev, verdict(r.AU.Mean, last.Threshold))
	fmt.Fprintf(w, "  %.0f samples/s (%.0f-%.0f), %.1f MB/s (%.1f-%.1f)\n", r.SamplesPerSec.Mean, r.SamplesPerSec.Min,
		r.SamplesPerSec.Max, r.MBPerSec.Mean, r.MBPerSec.Min, r.MBPerSec.Max)
	fmt.Fprintln(w, "last run:")
	last.WriteSummary(w)
}
