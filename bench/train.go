// `bench train`: N simulated accelerators read a generated data set the
// way a PyTorch DataLoader does (reader threads, each assembling whole
// batches, a bounded number of batches prefetched) and "compute" each
// batch for the workload's time, as MLPerf Storage's DLIO does.
package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
)

// TrainOptions shape a training run. Zero values take the workload's
// (the manifest names it): BatchSize and Readers from its profile,
// Compute its per-batch time on AccelType (default h100) times the
// manifest's scale, Threshold its AU threshold. Accelerators 0 is 1,
// Prefetch 0 is 2 (PyTorch's prefetch_factor), Epochs 0 is 3, Clock nil
// the wall clock.
type TrainOptions struct {
	Manifest     Manifest
	Prefix       string // where the data set lives
	Accelerators int
	AccelType    string
	BatchSize    int
	Compute      time.Duration
	Readers      int // DataLoader workers per accelerator
	Prefetch     int // batches each worker keeps ready
	Epochs       int
	Seed         uint64
	Threshold    float64
	Clock        Clock
}

// normalise fills the zero values (see TrainOptions) and checks the rest.
func (o TrainOptions) normalise() (TrainOptions, error) {
	p, perr := Workload(o.Manifest.Workload)
	if o.AccelType == "" {
		o.AccelType = "h100"
	}
	if o.Accelerators == 0 {
		o.Accelerators = 1
	}
	if o.Prefetch == 0 {
		o.Prefetch = 2
	}
	if o.Epochs == 0 {
		o.Epochs = 3
	}
	if o.Clock == nil {
		o.Clock = RealClock{}
	}
	if perr == nil {
		if o.BatchSize == 0 {
			o.BatchSize = p.BatchSize
		}
		if o.Readers == 0 {
			o.Readers = p.ReadThreads
		}
		if o.Threshold == 0 {
			o.Threshold = p.AUThreshold
		}
		if o.Compute == 0 {
			d, err := p.ComputeFor(o.AccelType)
			if err != nil {
				return o, err
			}
			o.Compute = time.Duration(math.Round(float64(d) * o.Manifest.Scale))
		}
	}
	if o.BatchSize < 1 || o.Readers < 1 || o.Compute <= 0 || o.Threshold <= 0 {
		if perr != nil {
			return o, fmt.Errorf("%w: give the batch size, readers, compute time and AU threshold", perr)
		}
		return o, errors.New("train: batch size, readers, compute time and threshold must be positive")
	}
	if o.Accelerators < 1 || o.Prefetch < 1 || o.Epochs < 1 {
		return o, errors.New("train: accelerators, prefetch and epochs must be positive")
	}
	return o, nil
}

// StepsPerEpoch is how many full batches each accelerator computes per
// epoch: the samples split evenly, the remainder dropped (as DLIO does).
func StepsPerEpoch(samples, accelerators, batch int) int {
	return samples / (accelerators * batch)
}

// Train runs the accelerators over st and reports what they achieved. c,
// if not nil, counts the samples and bytes read as they arrive.
func Train(ctx context.Context, st Store, o TrainOptions, c *Counters) (TrainResult, error) {
	o, err := o.normalise()
	if err != nil {
		return TrainResult{}, err
	}
	if c == nil {
		c = new(Counters)
	}
	all := o.Manifest.Samples()
	steps := StepsPerEpoch(len(all), o.Accelerators, o.BatchSize)
	if steps == 0 {
		return TrainResult{}, fmt.Errorf("train: %d samples give no full batch of %d to each of %d accelerators: generate more (--files)",
			len(all), o.BatchSize, o.Accelerators)
	}
	t := &trainer{o: o, st: st, c: c, prefix: Prefix(o.Prefix), meters: make([]Meter, o.Accelerators),
		samples0: c.Samples.Load(), bytes0: c.Bytes.Load()}
	start := o.Clock.Now()
	var epochs []time.Duration
	for e := range o.Epochs {
		order := shuffled(all, o.Seed+uint64(e))
		t0 := o.Clock.Now()
		g, gctx := errgroup.WithContext(ctx)
		for a := range o.Accelerators {
			g.Go(func() error { return t.epoch(gctx, a, batchesOf(order, a, o.Accelerators, o.BatchSize, steps)) })
		}
		if err := g.Wait(); err != nil {
			return TrainResult{}, err
		}
		epochs = append(epochs, o.Clock.Now().Sub(t0))
	}
	return t.result(o.Clock.Now().Sub(start), epochs), nil
}

// trainer is one run's shared state. mu guards lat; each accelerator
// owns meters[its index].
type trainer struct {
	o      TrainOptions
	st     Store
	c      *Counters
	prefix string
	meters []Meter
	// samples0 and bytes0 are c's counts when the run started (c may
	// carry earlier runs').
	samples0, bytes0 int64
	mu               sync.Mutex
	lat              []time.Duration // every sample's read latency
}

// shuffled is a seeded permutation of samples (a fresh order each epoch).
func shuffled(samples []Sample, seed uint64) []Sample {
	out := append([]Sample(nil), samples...)
	r := rand.New(rand.NewPCG(seed, 0x65706f6368)) // "epoch"
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// batchesOf is accelerator a's share of order: every n-th sample from
// a, cut into steps batches of size.
func batchesOf(order []Sample, a, n, size, steps int) [][]Sample {
	out := make([][]Sample, steps)
	for s := range out {
		b := make([]Sample, size)
		for i := range b {
			b[i] = order[(s*size+i)*n+a]
		}
		out[s] = b
	}
	return out
}

// epoch runs accelerator a through its batches: a DataLoader of
// o.Readers workers, each reading whole batches, with at most Readers x
// Prefetch batches in flight or waiting; batches are consumed in order.
func (t *trainer) epoch(ctx context.Context, a int, batches [][]Sample) error {
	ctx, cancel := context.WithCancel(ctx)
	clk := t.o.Clock
	// t0 is taken before any reader starts: every read falls in Active.
	t0 := clk.Now()
	// ready[i] gets one value: batch i's outcome.
	ready := make([]chan error, len(batches))
	for i := range ready {
		ready[i] = make(chan error, 1)
	}
	slots := make(chan struct{}, t.o.Readers*t.o.Prefetch)
	work := make(chan int)
	var wg sync.WaitGroup
	// Cancel first: the sampler may be waiting for a slot.
	defer func() { cancel(); wg.Wait() }()
	// The loader's index sampler hands out batch numbers as slots free.
	wg.Go(func() {
		defer close(work)
		for i := range batches {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			select {
			case work <- i:
			case <-ctx.Done():
				return
			}
		}
	})
	for range t.o.Readers {
		wg.Go(func() {
			for i := range work {
				ready[i] <- t.readBatch(ctx, batches[i])
			}
		})
	}
	m := &t.meters[a]
	for i := range batches {
		before := m.Compute
		err := m.step(ctx, clk, t.o.Compute, func() error {
			select {
			case err := <-ready[i]:
				<-slots
				return err
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		if err != nil {
			return err
		}
		t.c.Compute.Add(int64(m.Compute - before))
	}
	m.Active += clk.Now().Sub(t0)
	return nil
}

// readBatch reads a batch's samples one after another, as one
// DataLoader worker does.
func (t *trainer) readBatch(ctx context.Context, b []Sample) error {
	lat := make([]time.Duration, 0, len(b))
	defer func() {
		t.mu.Lock()
		t.lat = append(t.lat, lat...)
		t.mu.Unlock()
	}()
	for _, s := range b {
		f := t.o.Manifest.Files[s.File]
		t0 := t.o.Clock.Now()
		n, err := t.st.Read(ctx, t.prefix+f.Key, s.Off, s.Len, s.Whole)
		if err != nil {
			return err
		}
		lat = append(lat, t.o.Clock.Now().Sub(t0))
		t.c.Samples.Add(1)
		t.c.Bytes.Add(n)
	}
	return nil
}
