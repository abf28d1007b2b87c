// The epochs scenario (issue 6, "Speed"): a training data set of small
// files read whole, in a fresh random order each epoch, by parallel
// workers, from a slow origin (MinIO behind the slow proxy). The headline
// link (epochs_uncapped.go) has no per-connection cap: direct, nginx
// proxy_cache and granary. The capped link (-slow-* flags): directly and
// through `granary serve` with a cache that holds the data set, with a
// warm-up (`granary warm`) before the first epoch, and with a cache half
// the data set's size under each eviction policy. Each epoch reports
// samples/s, the p50 per-sample latency and the cache's hit rate.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/granary-dev/granary/internal/miniotest"
	"github.com/granary-dev/granary/internal/slowproxy"
)

// epochsBucket is the scenario's bucket on MinIO; every key is under
// epochsPrefix.
const (
	epochsBucket = "epochs"
	epochsPrefix = "train/"
)

// epochsPlan is the shape of an epochs run.
type epochsPlan struct {
	files       int // samples in the data set, one object each
	fileSize    int // bytes per sample: below the chunk size, so one chunk each
	workers     int // parallel readers
	epochs      int // epochs per configuration whose cache holds the data set
	evictEpochs int // epochs per configuration whose cache holds half of it
	evictRAM    int64
}

func fullEpochsPlan() epochsPlan {
	return epochsPlan{files: 20_000, fileSize: 100 << 10, workers: 16, epochs: 3, evictEpochs: 3, evictRAM: 64 << 20}
}

func quickEpochsPlan() epochsPlan {
	return epochsPlan{files: 2_000, fileSize: 100 << 10, workers: 16, epochs: 3, evictEpochs: 4, evictRAM: 16 << 20}
}

// dataBytes is the data set's size.
func (p epochsPlan) dataBytes() int64 { return int64(p.files) * int64(p.fileSize) }

// fitBudget is --ram and --disk of a node whose RAM tier alone holds the
// data set (with room for the RAM tier's working reserve) and whose disk
// tier holds it twice.
func (p epochsPlan) fitBudget() (ram, disk int64) {
	return p.dataBytes()*3/2 + 256<<20, 2 * p.dataBytes()
}

// evictBudget is --ram and --disk of a node whose cache is half the data
// set. Every chunk the node reads lands in RAM and is queued to disk, and
// a disk hit is copied back into RAM, so RAM mostly holds a subset of the
// disk tier: the disk tier is the capacity, and RAM is kept small so it
// adds little beyond it.
func (p epochsPlan) evictBudget() (ram, disk int64) {
	return p.evictRAM, p.dataBytes() / 2
}

// newEpochsObjects builds the data set: windows at distinct offsets into
// one random pool, as newDataset does (4099 does not divide the window
// range, and files*4099 stays below the pool for the plans here, so no
// two samples share their bytes).
func newEpochsObjects(p epochsPlan) []object {
	const poolSize = 64 << 20
	pool := randomBytes(poolSize, 6)
	objs := make([]object, p.files)
	for i := range objs {
		off := i * 4099 % (poolSize - p.fileSize)
		objs[i] = object{key: fmt.Sprintf("%s%06d", epochsPrefix, i), data: pool[off : off+p.fileSize]}
	}
	return objs
}

// epochsRun is one epochs scenario in progress.
type epochsRun struct {
	plan  epochsPlan
	objs  []object
	bin   string // granary binary; "" runs the direct and nginx rows only
	mio   *miniotest.Server
	proxy *slowproxy.Proxy // the capped link (-slow-*)
	fast  *slowproxy.Proxy // the uncapped link, the headline's; nil for hdfs-epochs
	rep   *epochsReport
	logf  func(string, ...any)
}

// origin is the address of link's proxy.
func (r *epochsRun) origin(link string) string {
	if link == linkUncapped {
		return r.fast.Addr()
	}
	return r.proxy.Addr()
}

// runEpochs measures the scenario; with o.granary empty, only the direct
// and nginx rows. A failure after some rows were measured logs the
// partial report.
func runEpochs(ctx context.Context, o options, logw io.Writer) (*epochsReport, error) {
	p := fullEpochsPlan()
	if o.quick {
		p = quickEpochsPlan()
	}
	slow := epochsLink(o)
	logf := func(format string, args ...any) { fmt.Fprintf(logw, "loadtest: epochs: "+format+"\n", args...) }
	mio, err := startMinio()
	if err != nil {
		return nil, err
	}
	defer mio.Stop()
	r := &epochsRun{plan: p, objs: newEpochsObjects(p), bin: o.granary, mio: mio, logf: logf,
		rep: &epochsReport{plan: p, slow: slow, fast: uncappedLink(), quick: o.quick, started: time.Now()}}
	d := &dataset{bucket: epochsBucket, sets: []objectSet{{objects: r.objs}}}
	if r.proxy, err = seedSlowOrigin(ctx, d, mio, slow, logf); err != nil {
		return nil, err
	}
	defer r.proxy.Close()
	if r.fast, err = slowproxy.Start(mio.Endpoint, uncappedLink()); err != nil {
		return nil, err
	}
	defer r.fast.Close()
	if err := publicRead(ctx, mio, epochsBucket); err != nil {
		return nil, err
	}
	err = measureLogged(&r.rep.loadStart, &r.rep.loadEnd, func() error { return r.measure(ctx) },
		func() bool { return len(r.rep.rows) > 0 }, r.rep.markdown, logf)
	if err != nil {
		return nil, err
	}
	return r.rep, nil
}

// measure runs every configuration in the report's order: the headline
// link's, then the capped link's.
func (r *epochsRun) measure(ctx context.Context) error {
	if err := r.headline(ctx); err != nil {
		return err
	}
	if err := r.direct(ctx, "", max(r.plan.epochs, r.plan.evictEpochs)); err != nil {
		return err
	}
	if r.bin == "" {
		return nil
	}
	ram, disk := r.plan.fitBudget()
	if err := r.gateway(ctx, gwConfig{name: cfgFits, ram: ram, disk: disk, epochs: r.plan.epochs}); err != nil {
		return err
	}
	if err := r.gateway(ctx, gwConfig{name: cfgWarm, ram: ram, disk: disk, epochs: r.plan.epochs, warm: true}); err != nil {
		return err
	}
	ram, disk = r.plan.evictBudget()
	for _, policy := range []string{"lru", "tinylfu"} {
		c := gwConfig{name: cfgHalf + policy, ram: ram, disk: disk, epochs: r.plan.evictEpochs, eviction: policy}
		if err := r.gateway(ctx, c); err != nil {
			return err
		}
	}
	return nil
}

// direct reads epochs epochs from the origin through link: as many as
// any configuration on that link reads, so each gateway epoch has its
// direct one.
func (r *epochsRun) direct(ctx context.Context, link string, epochs int) error {
	cl, tr, sc, err := newCountingS3Client(r.origin(link), r.mio.AccessKey, r.mio.SecretKey)
	if err != nil {
		return err
	}
	defer tr.CloseIdleConnections()
	for e := 1; e <= epochs; e++ {
		row, err := r.epoch(ctx, cl, sc, e)
		if err != nil {
			return fmt.Errorf("direct epoch %d: %w", e, err)
		}
		row.config, row.link = cfgDirect, link
		r.add(row)
	}
	return nil
}

// epoch reads every sample once in epoch e's order (the same order for
// every configuration, a fresh one each epoch) and returns its row: the
// time taken and the requests sc counted meanwhile.
func (r *epochsRun) epoch(ctx context.Context, cl *minio.Client, sc *statusCounter, e int) (epochRow, error) {
	req0, failed0 := sc.snapshot()
	rr, err := readRandomTimed(ctx, r.objs, r.plan.workers, uint64(1000+e), openS3(ctx, cl, epochsBucket))
	if err == nil && rr.verified != len(r.objs) {
		err = fmt.Errorf("verified %d samples of %d", rr.verified, len(r.objs))
	}
	req1, failed1 := sc.snapshot()
	return epochRow{epoch: strconv.Itoa(e), files: rr.verified, elapsed: rr.elapsed, p50: rr.p50(),
		requests: req1 - req0, failed: failed1 - failed0}, err
}

func (r *epochsRun) add(row epochRow) {
	hit := "-"
	if row.lookups() > 0 {
		hit = fmt.Sprintf("%.2f%%", 100*row.hitRate())
	}
	link := "capped"
	if row.link != "" {
		link = row.link
	}
	cpu, faults := row.cost.perSample(row.files)
	r.logf("%-8s %-45s epoch %-7s %6.0f samples/s  p50 %-8v  hit rate %-7s  lookups %.0f  origin GETs %.0f HEADs %.0f  requests %d (%d not 2xx)  node cpu/sample %v faults/sample %.1f",
		link, row.config, row.epoch, row.samplesPerSec(), row.p50.Round(10*time.Microsecond), hit, row.lookups(), row.originGets, row.originStats,
		row.requests, row.failed, cpu.Round(time.Microsecond), faults)
	r.rep.rows = append(r.rep.rows, row)
}

// gwConfig is one granary configuration measured over its epochs.
type gwConfig struct {
	name      string
	link      string // "" (the capped link) or linkUncapped
	ram, disk int64
	eviction  string // --eviction; "" leaves the node's default
	warm      bool   // run `granary warm` on the data set before epoch 1
	anonymous bool   // the bucket is public-read on the node; read unsigned
	epochs    int
}

// gateway starts a fresh node (empty cache) for c, reads c.epochs epochs
// through it and stops it.
func (r *epochsRun) gateway(ctx context.Context, c gwConfig) error {
	// The data set never changes under a training job: immutable metadata
	// keeps a HEAD round trip to the slow origin off every cached read
	// (with the default 1 m TTL a long epoch would revalidate each sample).
	args := []string{"--freshness", "immutable"}
	if c.eviction != "" {
		args = append(args, "--eviction", c.eviction)
	}
	if c.anonymous {
		cfg, err := anonymousConfig(epochsBucket)
		if err != nil {
			return err
		}
		defer os.Remove(cfg)
		args = append(args, "--config", cfg)
	}
	g, err := startGranary(r.bin, r.origin(c.link), r.mio.AccessKey, r.mio.SecretKey, c.ram, c.disk, args...)
	if err != nil {
		if c.eviction != "" {
			return fmt.Errorf("%s: granary serve --eviction %s did not start (a build without the --eviction flag fails so): %w", c.name, c.eviction, err)
		}
		return fmt.Errorf("%s: %w", c.name, err)
	}
	defer g.stop()
	if err := r.gatewayEpochs(ctx, c, g); err != nil {
		return fmt.Errorf("%s: %w\ngranary log tail:\n%s", c.name, err, g.tail())
	}
	return nil
}

// gatewayEpochs runs c's warm-up (if any) and epochs against g, reading
// g's cache counters before and after each.
func (r *epochsRun) gatewayEpochs(ctx context.Context, c gwConfig, g *granaryProc) error {
	access, secret := granaryAccess, granarySecret
	if c.anonymous {
		access, secret = "", ""
	}
	cl, tr, sc, err := newCountingS3Client(g.addr, access, secret)
	if err != nil {
		return err
	}
	defer tr.CloseIdleConnections()
	before, err := scrapeMetrics(ctx, g.endpoint())
	if err != nil {
		return err
	}
	if c.warm {
		ok, err := r.warmUp(ctx, c, g, before)
		if err != nil || !ok {
			return err
		}
		if before, err = scrapeMetrics(ctx, g.endpoint()); err != nil {
			return err
		}
	}
	bound := 0.0 // the cache holds the data set: no bound below 1
	if c.eviction != "" {
		bound = capacityBound(before, c.disk, r.plan.dataBytes())
	}
	for e := 1; e <= c.epochs; e++ {
		cost0, err := costOf(g)
		if err != nil {
			return err
		}
		row, err := r.epoch(ctx, cl, sc, e)
		if err != nil {
			return fmt.Errorf("epoch %d: %w", e, err)
		}
		cost1, err := costOf(g)
		if err != nil {
			return err
		}
		row.cost = cost1.minus(cost0)
		after, err := scrapeMetrics(ctx, g.endpoint())
		if err != nil {
			return err
		}
		row.config, row.link, row.cache, row.bound = c.name, c.link, after.cache().minus(before.cache()), bound
		row.dropped = after.sum("granary_disk_fill_dropped_total") - before.sum("granary_disk_fill_dropped_total")
		row.originGets = after.originGets() - before.originGets()
		row.originStats = after.originStats() - before.originStats()
		r.add(row)
		before = after
	}
	return nil
}
