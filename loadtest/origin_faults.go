// The origin-faults scenario: what a sick origin costs a node's clients.
// One `granary serve` node in front of MinIO through a fault proxy
// (internal/faultproxy), its data set warmed, metadata TTL 1 s so every
// phase reads past it; then phases: the origin healthy, hung (accepts TCP,
// never answers), refusing connections, and back. In each phase the warmed
// objects are read (every byte checked) and GETs/s and p99 compared with
// the healthy phase; in the faulty phases misses of objects never read
// measure how long until the breaker opens and how fast a miss fails once
// it is open; after the origin returns, how long until a miss is served
// again.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/minio/minio-go/v7/pkg/signer"

	"github.com/granary-dev/granary/internal/faultproxy"
)

// faultsPlan is the shape of an origin-faults run.
type faultsPlan struct {
	count  int // warmed objects
	size   int // bytes each
	conc   int
	rounds int // measured passes per phase
	misses int // misses timed once the breaker is open
	ram    int64
}

func fullFaultsPlan() faultsPlan {
	return faultsPlan{count: 5_000, size: 16 << 10, conc: 32, rounds: 3, misses: 200, ram: 512 << 20}
}

func quickFaultsPlan() faultsPlan {
	return faultsPlan{count: 300, size: 16 << 10, conc: 32, rounds: 1, misses: 50, ram: 256 << 20}
}

// Settings of the node under test.
const (
	faultsTTL     = time.Second
	faultsTimeout = 2 * time.Second // --origin-timeout
)

// faultsPhase is one phase's reads of the warmed set.
type faultsPhase struct {
	name   string
	passes []smallResult
	// breakerOpen is how long after the fault began the first miss (asked
	// after the phase's reads) was refused at once (503 SlowDown): an upper
	// bound on when the breaker opened. missP50/P99/Max time the misses
	// after it. Zero in the healthy phases.
	breakerOpen               time.Duration
	missP50, missP99, missMax time.Duration
	missCodes                 map[int]int // status of each timed miss
}

// runOriginFaults measures the scenario at its full or -quick size.
func runOriginFaults(ctx context.Context, o options, logw io.Writer) (*faultsReport, error) {
	p := fullFaultsPlan()
	if o.quick {
		p = quickFaultsPlan()
	}
	return runOriginFaultsPlan(ctx, o, p, logw)
}

// runOriginFaultsPlan measures the scenario shaped by p.
func runOriginFaultsPlan(ctx context.Context, o options, p faultsPlan, logw io.Writer) (*faultsReport, error) {
	if o.granary == "" {
		return nil, errors.New("the origin-faults scenario needs a granary binary (-granary)")
	}
	logf := func(format string, args ...any) { fmt.Fprintf(logw, "loadtest: origin-faults: "+format+"\n", args...) }
	d := newDataset(plan{count: p.count, sizes: []int{p.size}, concs: []int{p.conc}})
	mio, err := seededMinio(ctx, d, logf)
	if err != nil {
		return nil, err
	}
	defer mio.Stop()
	proxy, err := faultproxy.Start(mio.Endpoint)
	if err != nil {
		return nil, err
	}
	defer proxy.Close()
	g, err := startGranary(o.granary, proxy.Addr(), mio.AccessKey, mio.SecretKey, p.ram, 0,
		"--ttl", faultsTTL.String(), "--origin-timeout", faultsTimeout.String())
	if err != nil {
		return nil, err
	}
	defer g.stop()
	rep := &faultsReport{plan: p, quick: o.quick, started: time.Now()}
	err = measureLogged(&rep.loadStart, &rep.loadEnd, func() error { return measureFaults(ctx, d, g, proxy, rep, logf) },
		func() bool { return len(rep.phases) > 0 }, rep.markdown, logf)
	if err != nil {
		return nil, fmt.Errorf("%w\nnode log tail:\n%s", err, g.tail())
	}
	return rep, nil
}

// measureFaults warms the node, then runs the phases in order.
func measureFaults(ctx context.Context, d *dataset, g *granaryProc, proxy *faultproxy.Proxy, rep *faultsReport, logf func(string, ...any)) error {
	set := d.sets[0]
	cl := newClient(target{name: "granary", endpoint: g.endpoint(), access: granaryAccess, secret: granarySecret}, d.bucket, set.conc)
	defer cl.close()
	if _, err := runSmall(ctx, cl, set, "warm-up"); err != nil {
		return err
	}
	if _, err := g.awaitIdle(ctx, 5*time.Minute); err != nil {
		return err
	}
	misses := 0 // names the next key never read, so every miss is one
	miss := func() string { misses++; return fmt.Sprintf("never-read/%06d", misses) }
	for _, ph := range []struct {
		name string
		mode faultproxy.Mode
	}{{"healthy", faultproxy.Forward}, {"hung", faultproxy.Hang}, {"refused", faultproxy.Refuse}} {
		if err := proxy.Set(ph.mode); err != nil {
			return err
		}
		phase := faultsPhase{name: ph.name}
		faultAt := time.Now()
		// Reads first: the first pass meets the fault with the breaker
		// still closed (their background revalidations are what find the
		// origin sick).
		if err := readPhase(ctx, cl, set, &phase, rep.plan.rounds, logf); err != nil {
			return fmt.Errorf("%s: %w", ph.name, err)
		}
		if ph.mode != faultproxy.Forward {
			if err := timeMisses(ctx, cl, rep.plan.misses, miss, faultAt, &phase); err != nil {
				return fmt.Errorf("%s: %w", ph.name, err)
			}
			logf("%s: breaker open by %v after the fault; misses then p50 %v, p99 %v", ph.name,
				phase.breakerOpen.Round(time.Millisecond), phase.missP50, phase.missP99)
		}
		rep.phases = append(rep.phases, phase)
	}
	if err := proxy.Set(faultproxy.Forward); err != nil {
		return err
	}
	back := time.Now()
	// d.large[0] (seeded, never read) is a miss whatever the cache holds.
	if err := awaitServed(ctx, cl, d.large[0].key, 2*time.Minute); err != nil {
		return err
	}
	rep.recovery = time.Since(back)
	logf("back: a miss is served again %v after the origin returned", rep.recovery.Round(time.Millisecond))
	phase := faultsPhase{name: "back"}
	if err := readPhase(ctx, cl, set, &phase, rep.plan.rounds, logf); err != nil {
		return fmt.Errorf("back: %w", err)
	}
	rep.phases = append(rep.phases, phase)
	return nil
}

// readPhase waits out the TTL (every entry is stale), then reads the
// warmed set rounds times.
func readPhase(ctx context.Context, cl *client, set objectSet, ph *faultsPhase, rounds int, logf func(string, ...any)) error {
	for range rounds {
		if err := sleepCtx(ctx, faultsTTL+100*time.Millisecond); err != nil {
			return err
		}
		r, err := runSmall(ctx, cl, set, ph.name)
		if err != nil {
			return err
		}
		logf("%s: %.0f GET/s, p99 %v", ph.name, r.opsPerSec(), r.p99)
		ph.passes = append(ph.passes, r)
	}
	return nil
}

// timeMisses asks for objects nobody read, one at a time, until one is
// refused at once (the breaker is open; bounded by a minute), then times
// n more.
func timeMisses(ctx context.Context, cl *client, n int, next func() string, faultAt time.Time, ph *faultsPhase) error {
	deadline := faultAt.Add(time.Minute)
	for {
		code, _, slowDown, err := status(ctx, cl, next())
		if err != nil {
			return err
		}
		if code == http.StatusServiceUnavailable && slowDown {
			ph.breakerOpen = time.Since(faultAt)
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the breaker did not open within a minute of the fault (last miss: %d)", code)
		}
	}
	ph.missCodes = map[int]int{}
	lat := make([]time.Duration, 0, n)
	for range n {
		code, d, _, err := status(ctx, cl, next())
		if err != nil {
			return err
		}
		ph.missCodes[code]++
		lat = append(lat, d)
	}
	slices.Sort(lat)
	ph.missP50, ph.missP99, ph.missMax = percentile(lat, 0.5), percentile(lat, 0.99), lat[len(lat)-1]
	return nil
}

// awaitServed GETs key until the node serves it (the origin answers
// misses again), polling, at most limit.
func awaitServed(ctx context.Context, cl *client, key string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		code, _, _, err := status(ctx, cl, key)
		if err != nil {
			return err
		}
		if code == http.StatusOK {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("misses still fail (%d) %v after the origin returned", code, limit)
		}
		if err := sleepCtx(ctx, 10*time.Millisecond); err != nil {
			return err
		}
	}
}

// status GETs key and returns the answer's status, how long it took and
// whether it was SlowDown with a Retry-After.
func status(ctx context.Context, cl *client, key string) (code int, took time.Duration, slowDown bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cl.t.endpoint+"/"+cl.bucket+"/"+key, nil)
	if err != nil {
		return 0, 0, false, err
	}
	req.Header.Set("X-Amz-Content-Sha256", emptySHA256)
	req = signer.SignV4(*req, cl.t.access, cl.t.secret, "", "us-east-1")
	start := time.Now()
	resp, err := cl.http.Do(req)
	if err != nil {
		return 0, 0, false, err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	took = time.Since(start)
	slowDown = resp.Header.Get("Retry-After") != "" && strings.Contains(string(body), "<Code>SlowDown</Code>")
	return resp.StatusCode, took, slowDown, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
