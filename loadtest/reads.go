// The reads scenario: GETs of small object sets and of one large object
// (one stream, parallel ranges) from MinIO direct, the trivial server,
// nginx proxy_cache in front of MinIO and granary in front of MinIO, each
// cache read cold (its first pass) and warm, all in one run; or from an
// -endpoint alone (endpoint.go).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/granary-dev/granary/internal/miniotest"
)

// granaryBudget is the RAM and disk budget of the granary node: the RAM
// tier holds everything the run reads (about 4.1 GiB: two sets of 4 KiB
// and of 100 KiB objects, and two 1 GiB objects), as nginx's cache does,
// and the 1 GiB checkpoint saved through it (reads_fill.go).
// With less, the eviction policy rightly keeps the small objects read
// several times over the last large object read once, whose warm pass
// then reads the origin again.
func granaryBudget(quick bool) (ram, disk int64) {
	if quick {
		return 512 << 20, 2 << 30
	}
	return 6 << 30, 8 << 30
}

// run measures the reads scenario: against the -endpoint when one is
// given, else against the local lineup it starts.
func run(ctx context.Context, o options, logw io.Writer) (*report, error) {
	p := fullPlan()
	if o.quick {
		p = quickPlan()
	}
	return runPlan(ctx, o, p, logw)
}

// runBodies measures the bodies scenario: the reads scenario's lineup
// and report over bodiesPlan.
func runBodies(ctx context.Context, o options, logw io.Writer) (*report, error) {
	return runPlan(ctx, o, bodiesPlan(o.quick), logw)
}

// runPlan is run with the plan p.
func runPlan(ctx context.Context, o options, p plan, logw io.Writer) (*report, error) {
	logf := func(format string, args ...any) { fmt.Fprintf(logw, "loadtest: "+format+"\n", args...) }
	d := newDataset(p)
	if o.endpoint.url != "" {
		return readEndpoint(ctx, o.endpoint, d, &report{plan: p, quick: o.quick, started: time.Now()}, logf)
	}
	return readLocal(ctx, o, d, &report{plan: p, quick: o.quick, started: time.Now()}, logf)
}

// readLocal starts the local lineup (MinIO, the trivial server, nginx,
// and granary when o names a binary), seeds the data and measures it.
func readLocal(ctx context.Context, o options, d *dataset, rep *report, logf func(string, ...any)) (*report, error) {
	mio, err := seededMinio(ctx, d, logf)
	if err != nil {
		return nil, err
	}
	defer mio.Stop()
	if err := publicRead(ctx, mio, d.bucket); err != nil {
		return nil, err
	}
	triv, err := startTrivial(d)
	if err != nil {
		return nil, err
	}
	defer triv.close()
	ngx, err := startNginx(nginxOptions{upstream: mio.Endpoint, objects: len(d.all()), bytes: d.bytes()})
	if err != nil {
		return nil, err
	}
	defer ngx.stop()
	rep.targets = []target{
		{name: "minio", endpoint: mio.URL(), access: mio.AccessKey, secret: mio.SecretKey, procs: pidOf(mio.Pid()), targetKind: kindMinio},
		{name: "trivial", endpoint: triv.endpoint(), access: "x", secret: "x", targetKind: kindTrivial},
		{name: "nginx", endpoint: ngx.endpoint(), anonymous: true, procs: childrenOf(ngx.cmd.Process.Pid), origin: pidOf(mio.Pid()), targetKind: kindNginx},
		// The requests granary's signed pass sends, as boto3 signs them:
		// nginx ignores the signature, and every answer is a hit (its
		// warm pass came first), so none reaches MinIO.
		{name: nginxSigned, endpoint: ngx.endpoint(), access: granaryAccess, secret: granarySecret, procs: childrenOf(ngx.cmd.Process.Pid), origin: pidOf(mio.Pid()), targetKind: kindNginxSigned},
	}
	var g *granaryProc
	if o.granary != "" {
		ram, disk := granaryBudget(o.quick)
		cfg, err := anonymousConfig(d.bucket)
		if err != nil {
			return nil, err
		}
		defer os.Remove(cfg)
		// Metadata trusted for an hour, as nginx's proxy_cache_valid: a
		// warm pass minutes after the cold one reads, it does not
		// revalidate every object with the origin.
		if g, err = startGranary(o.granary, mio.Endpoint, mio.AccessKey, mio.SecretKey, ram, disk, "--config", cfg, "--ttl", "1h"); err != nil {
			return nil, err
		}
		defer g.stop()
		rep.granaryRAM = ram
		// The unsigned target reads the same node between its cold and warm
		// passes (schedule): warm, as nginx is read (the bucket is
		// anonymous-read).
		node, origin := pidOf(g.cmd.Process.Pid), pidOf(mio.Pid())
		rep.targets = append(rep.targets,
			target{name: "granary", endpoint: g.endpoint(), access: granaryAccess, secret: granarySecret, procs: node, origin: origin, targetKind: kindGranary},
			target{name: granaryUnsigned, endpoint: g.endpoint(), anonymous: true, procs: node, origin: origin, targetKind: kindGranaryUnsigned})
	}
	rep.loadStart = loadAverage()
	if err := measure(ctx, d, rep.targets, rep, logf); err != nil {
		if g != nil {
			logf("granary log tail:\n%s", g.tail())
		}
		logf("nginx log tail:\n%s", ngx.tail())
		return nil, err
	}
	if err := measureFills(ctx, d, rep.targets, saverCreds{mio.AccessKey, mio.SecretKey}, rep, logf); err != nil {
		return nil, err
	}
	rep.loadEnd = loadAverage()
	if g != nil {
		if rep.granaryPeakRSS, err = g.peakRSS(); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

func seedMinio(ctx context.Context, d *dataset, mio *miniotest.Server, logf func(string, ...any)) error {
	cl, err := minioAdmin(mio)
	if err != nil {
		return err
	}
	t0 := time.Now()
	if err := d.seed(ctx, cl, 16); err != nil {
		return err
	}
	logf("seeded %d objects into MinIO in %v", len(d.all()), time.Since(t0).Round(time.Millisecond))
	return nil
}

// minioAdmin is a client of mio with its root credentials.
func minioAdmin(mio *miniotest.Server) (*minio.Client, error) {
	return minio.New(mio.Endpoint, &minio.Options{
		Creds: credentials.NewStaticV4(mio.AccessKey, mio.SecretKey, ""), Region: "us-east-1",
	})
}

// publicRead makes bucket on mio public-read, for nginx's anonymous reads.
func publicRead(ctx context.Context, mio *miniotest.Server, bucket string) error {
	cl, err := minioAdmin(mio)
	if err != nil {
		return err
	}
	return makePublicRead(ctx, cl, bucket)
}

// nginxSigned is the target and pass of nginx read with signed GETs.
const nginxSigned = "nginx signed"

// granaryUnsigned is the target and pass of granary read with unsigned
// GETs, warm.
const granaryUnsigned = "granary unsigned"

// measure runs every scenario against every target, in the order of
// schedule, and after each small set the CPU comparison's rounds and
// the system call census.
func measure(ctx context.Context, d *dataset, targets []target, rep *report, logf func(string, ...any)) error {
	clients := make([]*client, len(targets))
	for i, t := range targets {
		clients[i] = newClient(t, d.bucket, 64)
		defer clients[i].close()
	}
	steps := schedule(targets)
	for _, set := range d.sets {
		for _, st := range steps {
			r, err := measureSmall(ctx, clients[st.target], targets[st.target], set, st.label)
			if err != nil {
				return err
			}
			c := r.cpu.perGet(r.n)
			logf("%d x %s c%d %-13s %8.0f ops/s  p50 %v  p99 %v  cpu/GET target %v (%.2f switches) origin %v client %v%s", r.n, r.set, r.conc, st.label,
				r.opsPerSec(), r.p50.Round(time.Microsecond), r.p99.Round(time.Microsecond), c.server, c.switches, c.origin, c.client,
				cacheNote(r.cacheHits, r.cacheOthers))
			rep.small = append(rep.small, r)
		}
		rs, ok, err := measureRounds(ctx, clients, targets, set, rep.quick, logf)
		if err != nil {
			return err
		}
		if ok {
			rep.rounds = append(rep.rounds, rs)
		}
		if err := measureCensus(ctx, clients, targets, set, rep, logf); err != nil {
			return err
		}
	}
	parts := []int{1, rep.plan.ranges}
	for k, obj := range d.large {
		for _, st := range steps {
			cl := clients[st.target]
			h0, o0 := cl.cacheHits()
			r, err := runLarge(ctx, cl, obj, parts[k], st.label)
			if err != nil {
				return err
			}
			r.cacheHits, r.cacheOthers = cacheDelta(cl, h0, o0)
			logf("%s %-13s %-13s %8.0f MB/s%s", sizeName(r.bytes), r.mode, st.label, r.mbPerSec(), cacheNote(r.cacheHits, r.cacheOthers))
			rep.large = append(rep.large, r)
		}
	}
	return nil
}

// measureSmall makes the pass label of t over set with cl, and meters
// what it cost.
func measureSmall(ctx context.Context, cl *client, t target, set objectSet, label string) (smallResult, error) {
	h0, o0 := cl.cacheHits()
	meter, err := startCPU(t)
	if err != nil {
		return smallResult{}, err
	}
	r, err := runSmall(ctx, cl, set, label)
	if err != nil {
		return smallResult{}, err
	}
	if label == coldPass(t) {
		// What the cold pass left to do (a cache's disk writes of what it
		// brought) is charged to it, not to the warm pass that follows.
		if err := settle(ctx, t.procs, false); err != nil {
			return smallResult{}, err
		}
	}
	if r.cpu, err = meter.used(); err != nil {
		return smallResult{}, err
	}
	r.cacheHits, r.cacheOthers = cacheDelta(cl, h0, o0)
	return r, nil
}

// cacheDelta is cl's cache status counts since h0 and o0.
func cacheDelta(cl *client, h0, o0 int64) (hits, others int64) {
	h, o := cl.cacheHits()
	return h - h0, o - o0
}

// cacheNote renders cache status counts for the log, or "" without any.
func cacheNote(hits, others int64) string {
	if hits+others == 0 {
		return ""
	}
	return fmt.Sprintf("  (%d of %d answers HIT)", hits, hits+others)
}
