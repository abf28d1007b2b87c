// The epochs scenario's markdown report: the headline link's table
// (epochs_headline.go), then one row per epoch of each configuration on
// the capped link (samples/s, p50 per sample, speed against the direct
// epoch, chunk hit rate and its bound), then the targets.
package main

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/granary-dev/granary/internal/slowproxy"
)

// The configurations, in the report's order; cfgHalf is followed by the
// eviction policy.
const (
	cfgDirect = "direct (slow origin)"
	cfgFits   = "gateway, cache holds the data set"
	cfgWarm   = "gateway, warm-up first"
	cfgHalf   = "gateway, cache ½ data set, --eviction "
)

// epochWarmUp is the epoch column of a warm-up row.
const epochWarmUp = "warm-up"

// epochRow is one epoch (or warm-up) of one configuration.
type epochRow struct {
	config  string
	link    string // "" (the capped link) or linkUncapped
	epoch   string // "1", "2", ... or epochWarmUp
	files   int
	elapsed time.Duration
	p50     time.Duration // per sample, open to last byte; 0 when not measured
	cache   cacheCounts   // chunk lookups during the epoch (nginx: its answers' cache statuses); zero for direct
	bound   float64       // capacity/dataset of a cache smaller than the data set; 0 otherwise
	dropped float64       // chunks the node's disk queue dropped during the epoch
	// originGets are the object reads the node sent to the origin during
	// the epoch: with one chunk per sample, 1 - originGets/files is the
	// hit rate as the origin sees it.
	originGets float64
	// originStats are the metadata requests (HEAD) it sent: none for a
	// sample whose metadata came with its bytes.
	originStats float64
	// cost is what the epoch cost the node (zero where no node served)
	cost nodeCost
	// requests are the HTTP requests the workers' client sent, failed
	// those answered with no 2xx (minio-go retries some out of sight).
	requests, failed int64
	note             string // replaces the measurements when set (e.g. n/a)
}

func (r epochRow) samplesPerSec() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.files) / r.elapsed.Seconds()
}

func (r epochRow) lookups() float64 { return r.cache.lookups() }

// originHitRate is 1 - originGets/files: the samples the origin did not
// have to serve.
func (r epochRow) originHitRate() float64 {
	if r.files <= 0 {
		return 0
	}
	return 1 - r.originGets/float64(r.files)
}
func (r epochRow) hitRate() float64 { return r.cache.hitRate() }

// epochsReport collects an epochs run's results.
type epochsReport struct {
	plan               epochsPlan
	slow               slowproxy.Options // the capped link
	fast               slowproxy.Options // the headline's link; zero without a headline (hdfs-epochs)
	quick              bool
	started            time.Time
	rows               []epochRow
	loadStart, loadEnd string // as in report
}

// find returns the row of config and epoch on the capped link, or a zero
// row.
func (r *epochsReport) find(config, epoch string) epochRow { return r.findOn("", config, epoch) }

// findOn returns the row of config and epoch on link, or a zero row.
func (r *epochsReport) findOn(link, config, epoch string) epochRow {
	for _, row := range r.rows {
		if row.link == link && row.config == config && row.epoch == epoch && row.note == "" {
			return row
		}
	}
	return epochRow{}
}

// speedup is row's samples/s over the direct ones of the same link and
// epoch (of epoch 1 for a warm-up); 0 when either is missing.
func (r *epochsReport) speedup(row epochRow) float64 {
	return r.versus(row, cfgDirect)
}

// versus is row's samples/s over those of config on the same link and
// epoch (of epoch 1 for a warm-up); 0 when either is missing.
func (r *epochsReport) versus(row epochRow, config string) float64 {
	epoch := row.epoch
	if epoch == epochWarmUp {
		epoch = "1"
	}
	d := r.findOn(row.link, config, epoch)
	if d.samplesPerSec() <= 0 || row.samplesPerSec() <= 0 {
		return 0
	}
	return row.samplesPerSec() / d.samplesPerSec()
}

func (r *epochsReport) markdown() string {
	return r.render(func(b *strings.Builder) { r.header(b); r.headline(b); r.cappedHeader(b) }, r.targets)
}

// render is the report with the given header and targets sections (the
// HDFS scenario has its own).
func (r *epochsReport) render(header, targets func(*strings.Builder)) string {
	var b strings.Builder
	header(&b)
	r.table(&b)
	r.costTable(&b)
	if slices.ContainsFunc(r.rows, func(row epochRow) bool { return row.config != cfgDirect && row.link == "" }) {
		targets(&b)
	}
	return b.String()
}

// header renders the title and what was measured how.
func (r *epochsReport) header(b *strings.Builder) {
	p := r.plan
	fmt.Fprintf(b, "# Granary training epochs through a slow origin\n\n")
	b.WriteString(runStamp(r.started, r.quick))
	fmt.Fprintf(b, ". A data set of %d samples of %s (%s, random bytes, one object each, so one cache chunk each), "+
		"read whole in a fresh random order each epoch (the same order for every configuration) by %d workers, "+
		"each a minio-go GetObject per sample with every byte verified; p50 is the median time per sample, from the GET "+
		"to the last byte. The origin is MinIO behind a throttling proxy standing in for a remote object store. "+
		"Granary's origin is the same proxy; each configuration starts a "+
		"fresh node (empty cache) with --freshness immutable, as a training data set does not change (with the default "+
		"1 m TTL a slow epoch would send a HEAD to the origin for each cached sample). "+
		"Load average (1 min) %s before, %s after.\n\n",
		p.files, sizeName(int64(p.fileSize)), mib(p.dataBytes()), p.workers, r.loadStart, r.loadEnd)
}

// cappedHeader renders the capped link's section heading and budgets.
func (r *epochsReport) cappedHeader(b *strings.Builder) {
	p := r.plan
	fmt.Fprintf(b, "## Capped link: %s\n\nThe link of the earlier runs, where a small-file reader's round trip per request dominates "+
		"and each connection is capped (the -slow-* flags change it).\n\n", r.slow)
	fitRAM, fitDisk := p.fitBudget()
	evRAM, evDisk := p.evictBudget()
	fmt.Fprintf(b, "Cache that holds the data set: --ram %s --disk %s. Cache half the data set: --ram %s --disk %s. "+
		"The gateway keeps the chunks it reads in RAM (as far as RAM's admission takes them) and queues them to disk, "+
		"and copies a disk hit back into RAM where RAM's admission takes it (one it declines is sent from its segment), so "+
		"RAM mostly holds a subset of the disk tier: the disk tier is the capacity that counts, sized to half the data set, "+
		"and RAM is kept small so it adds little beyond it. The bound is the disk tier's capacity (as the node reports it) "+
		"over the data set: the hit rate a cache that size can expect at best when every sample is read once per epoch "+
		"in an order it cannot foresee.\n\n", mib(fitRAM), mib(fitDisk), mib(evRAM), mib(evDisk))
}

// table renders one row per epoch, then notes on the rows.
func (r *epochsReport) table(b *strings.Builder) {
	b.WriteString("| configuration | epoch | samples/s | p50 | vs direct (same epoch) | hit rate | bound | chunk lookups | origin GETs | origin HEADs | 1 - origin GETs/samples |\n" +
		"|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	var dropped, failed []string
	for _, row := range r.rows {
		if row.link != "" {
			continue
		}
		if row.note != "" {
			fmt.Fprintf(b, "| %s | %s | %s | | | | | | | | |\n", row.config, row.epoch, row.note)
			continue
		}
		hit, bound, lookups, gets, heads, originHit := "-", "-", "-", "-", "-", "-"
		if row.config != cfgDirect {
			hit, lookups = percent(row.hitRate()), strconv.FormatFloat(row.lookups(), 'f', 0, 64)
			gets, originHit = strconv.FormatFloat(row.originGets, 'f', 0, 64), percent(row.originHitRate())
			heads = strconv.FormatFloat(row.originStats, 'f', 0, 64)
		}
		if row.bound > 0 {
			bound = percent(row.bound)
		}
		epoch := row.epoch
		if epoch == epochWarmUp {
			epoch = fmt.Sprintf("%s: %.1f s", epochWarmUp, row.elapsed.Seconds())
		}
		fmt.Fprintf(b, "| %s | %s | %.0f | %s | %s | %s | %s | %s | %s | %s | %s |\n", row.config, epoch, row.samplesPerSec(),
			p50(row), ratio(r.speedup(row), 1), hit, bound, lookups, gets, heads, originHit)
		if row.failed > 0 {
			failed = append(failed, fmt.Sprintf("%d of %d in %s epoch %s", row.failed, row.requests, row.config, row.epoch))
		}
		if row.dropped > 0 {
			dropped = append(dropped, fmt.Sprintf("%.0f in %s epoch %s", row.dropped, row.config, row.epoch))
		}
	}
	b.WriteString("\nHit rate is the node's own count over the epoch: granary_cache_hits_total (all tiers) over it plus " +
		"granary_cache_misses_total. Chunk lookups (hits plus misses) should be one per sample; where a cold epoch shows more, " +
		"the node counted some cold reads twice (say a miss for the first chunk fetched with the metadata, then a hit when the read " +
		"found that chunk stored), which flatters the hit rate of an epoch with misses. The last column is the cross-check from the " +
		"origin's side: the share of samples for which the node sent no GET to the origin (one chunk per sample); below zero, the node " +
		"read some samples from the origin more than once. Origin HEADs should be 0: a cold sample's metadata comes with its bytes, " +
		"and each HEAD is one more round trip over the link before them. A warm-up row gives the time `granary warm` took; its samples/s is the data set " +
		"over that time, compared with direct epoch 1.")
	if len(failed) > 0 {
		fmt.Fprintf(b, " Requests answered without a 2xx status (minio-go retried them; each retry is one more lookup): %s.", strings.Join(failed, ", "))
	}
	if len(dropped) > 0 {
		fmt.Fprintf(b, " Chunks the node's disk queue dropped (full queue; still in RAM, missing from disk): %s.", strings.Join(dropped, ", "))
	}
	b.WriteString("\n\n")
}

// minHitRate is the lowest rate (hitRate or originHitRate) of config's
// epochs from epoch 2 on; NaN when it has none.
func (r *epochsReport) minHitRate(config string, rate func(epochRow) float64) float64 {
	low := math.NaN()
	for _, row := range r.rows {
		if e, err := strconv.Atoi(row.epoch); row.link == "" && row.config == config && row.note == "" && err == nil && e >= 2 {
			if math.IsNaN(low) || rate(row) < low {
				low = rate(row)
			}
		}
	}
	return low
}

// hitGoal renders config's lowest hit rates from epoch 2 on, by the
// node's counters and from the origin's side, and whether both reach
// target.
func (r *epochsReport) hitGoal(config string, target float64) (measured string, ok bool) {
	h, o := r.minHitRate(config, epochRow.hitRate), r.minHitRate(config, epochRow.originHitRate)
	if math.IsNaN(h) {
		return "", false
	}
	return fmt.Sprintf("%s (origin side %s)", percent(h), percent(o)), h >= target && o >= target
}

// bound returns the bound of config's epochs (0 when none).
func (r *epochsReport) bound(config string) float64 {
	return r.find(config, "1").bound
}

// targets renders the goals against the measurements.
func (r *epochsReport) targets(b *strings.Builder) {
	b.WriteString("## The issue's targets\n\nA hit-rate goal is met when both the node's count and the origin-side figure reach it.\n\n" +
		"| goal | measured | target | met |\n|---|---:|---:|---|\n")
	r.headlineTargets(b)
	goal := func(name string, ok bool, measured, target string, metText ...string) {
		writeGoal(b, name, ok, measured, target, metText...)
	}
	for _, c := range []string{cfgFits, cfgWarm} {
		s := r.speedup(r.find(c, "2"))
		goal("epoch 2, capped link, "+c, s >= 10, ifSome(s > 0, fmt.Sprintf("%.1fx direct", s)), "≥ 10x direct")
	}
	for _, c := range []string{cfgFits, cfgWarm} {
		measured, ok := r.hitGoal(c, 0.999)
		goal("lowest hit rate from epoch 2 on, "+c, ok, measured, "≥ 99.9%")
	}
	for _, policy := range []string{"tinylfu", "lru"} {
		c := cfgHalf + policy
		bound := r.bound(c)
		measured, ok := r.hitGoal(c, 0.9*bound)
		var comparison []string
		if policy == "lru" {
			comparison = []string{"(comparison)"}
		}
		goal("lowest hit rate from epoch 2 on, "+c, ok, measured,
			fmt.Sprintf("≥ 0.9 x %s = %s", percent(bound), percent(0.9*bound)), comparison...)
	}
	b.WriteString("\n")
}

// ifSome returns s when ok, else "" (rendered n/a).
func ifSome(ok bool, s string) string {
	if !ok {
		return ""
	}
	return s
}

func percent(f float64) string { return fmt.Sprintf("%.2f%%", 100*f) }
