// The measured scenarios: many small GETs at a fixed concurrency, and one
// large object read as a single stream or as parallel ranges.
package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// smallResult is one pass of GETs over an object set.
type smallResult struct {
	set      string // object size, e.g. "4KiB"
	conc     int
	target   string // "minio", "trivial", "nginx cold", "nginx warm", "granary cold", "granary warm"
	n        int
	elapsed  time.Duration
	p50, p99 time.Duration
	// cacheHits and cacheOthers count the answers with a cache status
	// header (nginx's): HIT, and anything else.
	cacheHits, cacheOthers int64
	cpu                    cpuUse // over the whole pass
}

func (r smallResult) opsPerSec() float64 { return float64(r.n) / r.elapsed.Seconds() }

// runSmall GETs every object of set once, in a fixed shuffled order, with
// set.conc workers, verifying each body.
func runSmall(ctx context.Context, cl *client, set objectSet, label string) (smallResult, error) {
	order := rand.New(rand.NewPCG(7, uint64(set.size))).Perm(len(set.objects))
	lat := make([]time.Duration, len(order)) // slot i is written only by the worker that took i
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, set.conc)
	start := time.Now()
	for range set.conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, set.size+1)
			for i := next.Add(1) - 1; i < int64(len(order)); i = next.Add(1) - 1 {
				o := set.objects[order[i]]
				t0 := time.Now()
				if _, err := cl.get(ctx, o.key, 0, o.data, true, buf); err != nil {
					errs <- err
					return
				}
				lat[i] = time.Since(t0)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return smallResult{}, err
	}
	slices.Sort(lat)
	return smallResult{
		set: set.name, conc: set.conc, target: label, n: len(lat), elapsed: elapsed,
		p50: percentile(lat, 0.50), p99: percentile(lat, 0.99),
	}, nil
}

// percentile returns the q-quantile of sorted (nearest rank).
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// largeResult is one read of a large object.
type largeResult struct {
	mode    string // "single stream" or "8 ranges"
	target  string
	bytes   int64
	elapsed time.Duration
	// cacheHits and cacheOthers as in smallResult.
	cacheHits, cacheOthers int64
}

func (r largeResult) mbPerSec() float64 { return float64(r.bytes) / 1e6 / r.elapsed.Seconds() }

// runLarge reads obj in parts contiguous ranges at once (1 means one plain
// GET of the whole object), verifying every byte.
func runLarge(ctx context.Context, cl *client, obj object, parts int, label string) (largeResult, error) {
	size := int64(len(obj.data))
	mode := "single stream"
	if parts > 1 {
		mode = fmt.Sprintf("%d ranges", parts)
	}
	step := (size + int64(parts) - 1) / int64(parts)
	var wg sync.WaitGroup
	var total atomic.Int64
	errs := make(chan error, parts)
	start := time.Now()
	for p := range int64(parts) {
		off, end := p*step, min((p+1)*step, size)
		if off >= end {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, readBufSize)
			n, err := cl.get(ctx, obj.key, off, obj.data[off:end], parts == 1, buf)
			total.Add(n)
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return largeResult{}, err
	}
	if total.Load() != size {
		return largeResult{}, fmt.Errorf("%s: read %d bytes of %d", obj.key, total.Load(), size)
	}
	return largeResult{mode: mode, target: label, bytes: size, elapsed: elapsed}, nil
}
