// Random-order reads of a data set, as a training epoch makes them: every
// object once, whole, in a seeded random order, by parallel readers, with
// every body verified and each sample's latency (open to last byte) kept.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// randomReads is one pass of readRandomTimed.
type randomReads struct {
	elapsed  time.Duration
	verified int
	latency  []time.Duration // per sample read, sorted
}

// p50 is the median per-sample latency.
func (r randomReads) p50() time.Duration { return percentile(r.latency, 0.5) }

// readRandom reads every object of objs once, whole, in a random order,
// with readers parallel readers, each calling open for its next object;
// every body is verified. It returns the elapsed time and how many bodies
// were verified.
func readRandom(ctx context.Context, objs []object, readers int, seed uint64, open func(object) (io.ReadCloser, error)) (time.Duration, int, error) {
	r, err := readRandomTimed(ctx, objs, readers, seed, open)
	return r.elapsed, r.verified, err
}

// readRandomTimed is readRandom keeping each sample's latency.
func readRandomTimed(ctx context.Context, objs []object, readers int, seed uint64, open func(object) (io.ReadCloser, error)) (randomReads, error) {
	order := rand.New(rand.NewPCG(seed, 0)).Perm(len(objs))
	lat := make([]time.Duration, len(order)) // slot i written only by the reader that took i
	var next, verified atomic.Int64
	errs := make([]error, readers)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 2*len(objs[0].data)+1)
			for i := next.Add(1) - 1; i < int64(len(order)) && ctx.Err() == nil; i = next.Add(1) - 1 {
				t0 := time.Now()
				if errs[w] = readOne(objs[order[i]], buf, open); errs[w] != nil {
					return
				}
				lat[i] = time.Since(t0)
				verified.Add(1)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return randomReads{}, err
	}
	n := int(verified.Load())
	if n < len(lat) { // cancelled: keep the samples read
		lat = slices.DeleteFunc(lat, func(d time.Duration) bool { return d == 0 })
	}
	slices.Sort(lat)
	return randomReads{elapsed: elapsed, verified: n, latency: lat}, ctx.Err()
}

// readOne opens o, reads it whole into buf and verifies it.
func readOne(o object, buf []byte, open func(object) (io.ReadCloser, error)) error {
	r, err := open(o)
	if err != nil {
		return err
	}
	n, err := readAllInto(r, buf)
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", o.key, err)
	}
	return verify(o, buf[:n])
}
