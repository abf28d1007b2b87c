// `granary bench train`: simulated accelerators over a data set `bench
// gen` wrote, once, --repeat times (with the spread) or in a --find-max
// search; and the progress line every bench subcommand draws.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/granary-dev/granary/bench"
)

// benchTrainFlags are train's own flags.
type benchTrainFlags struct {
	o        bench.TrainOptions
	compute  time.Duration
	auPct    float64
	repeat   int
	findMax  bool
	maxAccel int
	also     []string // more endpoints of the service to spread reads over
	byOwners bool     // each read to its chunk's owner, by the endpoint's ring
}

func newBenchTrainCmd(getenv Getenv) *cobra.Command {
	var bf benchFlags
	var tf benchTrainFlags
	cmd := &cobra.Command{
		Use:   "train s3://BUCKET/PREFIX/",
		Short: "Run simulated accelerators over a generated data set and report their AU",
		Long: `Run --accelerators simulated accelerators over the data set 'bench gen'
wrote under s3://BUCKET/PREFIX/. Each epoch the samples are shuffled and
split evenly; each accelerator takes batches of the workload's size from a
DataLoader of --readers workers (each reading whole batches, sample after
sample) with --prefetch batches per worker in flight, and "computes" each
batch for the workload's time on --accelerator-type (a sleep, as MLPerf
Storage's DLIO does). Reports AU (the share of time spent computing) per
accelerator and overall against the workload's threshold, samples/s,
MB/s, read latency p50/p99 and epoch times. --repeat runs it again and
gives the spread; --find-max searches for the most accelerators kept at
or above the threshold.`,
		Example: `  granary bench train --endpoint http://127.0.0.1:9000 --accelerators 4 s3://bench/unet3d/
  granary bench train --find-max --repeat 3 s3://bench/unet3d/`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return benchTrain(cmd, getenv, &bf, tf, args[0])
		},
	}
	fs := cmd.Flags()
	bf.register(fs)
	fs.IntVar(&tf.o.Accelerators, "accelerators", 1, "simulated accelerators")
	fs.StringVar(&tf.o.AccelType, "accelerator-type", "h100", "accelerator whose compute time to simulate: a100, h100")
	fs.IntVar(&tf.o.BatchSize, "batch-size", 0, "samples per batch (default: the workload's)")
	fs.DurationVar(&tf.compute, "compute", 0, "compute time per batch (default: the workload's on --accelerator-type, times the data set's scale)")
	fs.IntVar(&tf.o.Readers, "readers", 0, "DataLoader workers per accelerator (default: the workload's read threads)")
	fs.IntVar(&tf.o.Prefetch, "prefetch", 2, "batches each worker keeps in flight")
	fs.IntVar(&tf.o.Epochs, "epochs", 3, "epochs")
	fs.Uint64Var(&tf.o.Seed, "seed", 1, "seed of the sample order")
	fs.Float64Var(&tf.auPct, "au-threshold", 0, "AU `percent` an accelerator count must reach (default: the workload's, e.g. 90 for unet3d)")
	fs.IntVar(&tf.repeat, "repeat", 1, "runs of each configuration; the summary gives their spread")
	fs.BoolVar(&tf.findMax, "find-max", false, "search for the most accelerators kept at or above the AU threshold")
	fs.StringSliceVar(&tf.also, "also-endpoint", nil, "another `URL` of the same service (a cluster's other nodes; repeat or comma-separate): "+
		"reads go to --endpoint and these in turn, as a job whose ranks run on every node reads")
	fs.BoolVar(&tf.byOwners, "by-owners", false, "send each read to the cluster member that owns the chunk it starts in, "+
		"as granary mount and the boto3 helper do (the placement asked of --endpoint, GET /_granary/ring)")
	fs.IntVar(&tf.maxAccel, "max-accelerators", 0, "most accelerators --find-max tries (default: as many as the data set gives a batch each)")
	return cmd
}

// benchTrain runs train's command line.
func benchTrain(cmd *cobra.Command, getenv Getenv, bf *benchFlags, tf benchTrainFlags, target string) error {
	if tf.repeat < 1 || tf.o.Accelerators < 1 || tf.auPct < 0 || tf.auPct > 100 {
		return usageError{fmt.Errorf("--repeat and --accelerators must be positive, --au-threshold within 0-100")}
	}
	if tf.byOwners && len(tf.also) > 0 {
		return usageError{fmt.Errorf("--by-owners sends each read to its owner: --also-endpoint has no part in it")}
	}
	tf.o.Compute, tf.o.Threshold = tf.compute, tf.auPct/100
	_, prefix, err := parseS3URL(target)
	if err != nil {
		return usageError{err}
	}
	tf.o.Prefix = prefix
	ctx := cmd.Context()
	// The manifest first, with few connections, to size the pool.
	st, _, err := bf.store(getenv, target, 2)
	if err != nil {
		return err
	}
	if tf.o.Manifest, err = bench.LoadManifest(ctx, st, prefix); err != nil {
		return fmt.Errorf("%w (write the data set first: granary bench gen %s)", err, target)
	}
	hi := tf.maxAccel
	if batch := max(tf.o.BatchSize, workloadBatch(tf.o.Manifest.Workload)); hi == 0 && batch > 0 {
		hi = len(tf.o.Manifest.Samples()) / batch
	}
	most := tf.o.Accelerators
	if tf.findMax {
		most = hi
	}
	readers := max(tf.o.Readers, 8)
	var reads bench.Store
	if tf.byOwners {
		reads, err = bf.byOwners(ctx, getenv, target, most*readers)
	} else {
		reads, err = bf.spread(getenv, target, most*readers, tf.also)
	}
	if err != nil {
		return err
	}
	var c bench.Counters
	var label atomic.Value
	label.Store("")
	var run atomic.Pointer[runMark]
	run.Store(&runMark{start: time.Now(), accel: 1})
	stop := startBenchProgress(cmd.ErrOrStderr(), func(el time.Duration) string {
		return fmt.Sprintf("train %s%s: %s, %d samples, %s, %s", tf.o.Manifest.Workload, label.Load(), run.Load().au(&c, time.Now()),
			c.Samples.Load(), humanRate(float64(c.Bytes.Load())/max(el.Seconds(), 0.001)), el.Round(time.Second))
	})
	defer stop()
	runK := func(ctx context.Context, n int) (bench.Repeated, error) {
		var runs []bench.TrainResult
		for k := range tf.repeat {
			o := tf.o
			o.Accelerators, o.Seed = n, tf.o.Seed+uint64(k)*1000
			label.Store(fmt.Sprintf(" %d x %s, run %d/%d", n, o.AccelType, k+1, tf.repeat))
			run.Store(&runMark{start: time.Now(), accel: n, compute0: c.Compute.Load()})
			r, err := bench.Train(ctx, reads, o, &c)
			if err != nil {
				return bench.Repeated{}, err
			}
			runs = append(runs, r)
		}
		return bench.Repeat(runs), nil
	}
	if !tf.findMax {
		rep, err := runK(ctx, tf.o.Accelerators)
		stop()
		if err != nil {
			return err
		}
		return bf.report(cmd.OutOrStdout(), rep)
	}
	res, err := bench.FindMax(ctx, hi, func(ctx context.Context, n int) (bench.TrainResult, error) {
		rep, err := runK(ctx, n)
		if err != nil {
			return bench.TrainResult{}, err
		}
		r := rep.Runs[len(rep.Runs)-1]
		r.AU, r.Passed = rep.AU.Mean, rep.Passed // judge the mean of the repeats
		return r, nil
	})
	stop()
	if err != nil {
		return err
	}
	return bf.report(cmd.OutOrStdout(), res)
}

// workloadBatch is the named workload's batch size, 0 if unknown.
func workloadBatch(name string) int {
	p, err := bench.Workload(name)
	if err != nil {
		return 0
	}
	return p.BatchSize
}

// benchProgressEvery spaces redraws on a terminal; benchLineEvery the
// plain lines otherwise.
const (
	benchProgressEvery = 250 * time.Millisecond
	benchLineEvery     = 5 * time.Second
)

// startBenchProgress draws render's line on w until the returned stop
// (idempotent) is called: redrawn in place, cut to 79 columns, on a
// terminal; a plain line every few seconds otherwise.
func startBenchProgress(w io.Writer, render func(elapsed time.Duration) string) (stop func()) {
	f, ok := w.(*os.File)
	tty := ok && term.IsTerminal(int(f.Fd()))
	every := benchLineEvery
	if tty {
		every = benchProgressEvery
	}
	start := time.Now()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				if tty {
					fmt.Fprint(w, "\r\033[K")
				}
				return
			case <-t.C:
				line := render(time.Since(start))
				if tty {
					fmt.Fprintf(w, "\r\033[K%s", fitColumns(line, 79))
				} else {
					fmt.Fprintln(w, line)
				}
			}
		}
	})
	var once sync.Once
	return func() { once.Do(func() { close(done); wg.Wait() }) }
}

// fitColumns cuts s to at most n runes.
func fitColumns(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return strings.TrimSpace(string(r[:n-1])) + "…"
}

// runMark is where the run in progress started, for the progress line's
// AU so far: the compute since, over the time since on every accelerator.
type runMark struct {
	start    time.Time
	accel    int
	compute0 int64
}

func (m *runMark) au(c *bench.Counters, now time.Time) string {
	el := now.Sub(m.start)
	if el < time.Second {
		return "AU -"
	}
	au := float64(c.Compute.Load()-m.compute0) / (float64(el) * float64(m.accel))
	return fmt.Sprintf("AU %.1f%%", 100*min(au, 1))
}
