// Tests of the epochs scenario's arithmetic: the /metrics text parsed into
// an epoch's chunk hit rate and origin reads, the capacity bound, and the
// targets the report judges from them.
package main

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

// metricsText renders a node's counters as the Prometheus text format
// writes them.
func metricsText(ram, disk, misses, gets, diskCap float64) string {
	return strings.NewReplacer("RAM", ftoa(ram), "DISK", ftoa(disk), "MISS", ftoa(misses),
		"GETS", ftoa(gets), "CAP", ftoa(diskCap)).Replace(`# HELP granary_cache_hits_total Chunks served from a cache tier.
# TYPE granary_cache_hits_total counter
granary_cache_hits_total{tier="disk"} DISK
granary_cache_hits_total{tier="ram"} RAM
# HELP granary_cache_misses_total Chunks found in no tier.
# TYPE granary_cache_misses_total counter
granary_cache_misses_total MISS
granary_cache_miss_joins_total 7
granary_origin_requests_total{op="get",result="ok"} GETS
granary_origin_requests_total{op="get",result="error"} 1
granary_origin_requests_total{op="stat",result="ok"} 50
granary_tier_capacity_bytes{tier="disk"} CAP
granary_tier_capacity_bytes{tier="ram"} 1.6777216e+07
process_start_time_seconds 1.7e+09 1700000000000

`)
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func TestEpochHitRateFromMetrics(t *testing.T) {
	before, err := parseMetrics(strings.NewReader(metricsText(10, 5, 100, 100, 1.024e+08)))
	if err != nil {
		t.Fatal(err)
	}
	after, err := parseMetrics(strings.NewReader(metricsText(910, 1005, 185, 180, 1.024e+08)))
	if err != nil {
		t.Fatal(err)
	}
	if got := after[`granary_tier_capacity_bytes{tier="ram"}`]; got != 16777216 {
		t.Errorf("ram capacity parsed as %v, want 16777216", got)
	}
	if got := after["process_start_time_seconds"]; got != 1.7e9 {
		t.Errorf("a sample with a timestamp parsed as %v, want 1.7e9", got)
	}
	c := after.cache().minus(before.cache())
	// 900 RAM hits + 1000 disk hits, 85 misses over the epoch.
	if c.hits != 1900 || c.misses != 85 || c.lookups() != 1985 {
		t.Fatalf("epoch counts %+v, want 1900 hits and 85 misses", c)
	}
	if got, want := c.hitRate(), 1900.0/1985; math.Abs(got-want) > 1e-12 {
		t.Errorf("hit rate %v, want %v", got, want)
	}
	// op="get" of both results, not the stats.
	if got := after.originGets() - before.originGets(); got != 80 {
		t.Errorf("origin GETs over the epoch %v, want 80", got)
	}
	if got := after.originStats() - before.originStats(); got != 0 {
		t.Errorf("origin HEADs over the epoch %v, want 0 (the fixture's count does not move)", got)
	}
	if got := after.originStats(); got != 50 {
		t.Errorf("origin HEADs %v, want 50", got)
	}
	if got := (cacheCounts{}).hitRate(); got != 0 {
		t.Errorf("hit rate without lookups %v, want 0", got)
	}
}

func TestParseMetricsRejectsGarbage(t *testing.T) {
	for _, text := range []string{"granary_cache_misses_total\n", "granary_cache_misses_total many\n"} {
		if _, err := parseMetrics(strings.NewReader(text)); err == nil {
			t.Errorf("parseMetrics(%q) accepted it", text)
		}
	}
}

func TestCapacityBound(t *testing.T) {
	data := int64(2000 * 100 << 10)
	withCap, _ := parseMetrics(strings.NewReader(metricsText(0, 0, 0, 0, float64(data/4))))
	if got := capacityBound(withCap, data/2, data); got != 0.25 {
		t.Errorf("bound from the node's disk capacity %v, want 0.25", got)
	}
	if got := capacityBound(metricSet{}, data/2, data); got != 0.5 {
		t.Errorf("bound from --disk %v, want 0.5", got)
	}
	if got := capacityBound(metricSet{}, 2*data, data); got != 1 {
		t.Errorf("bound of a cache larger than the data %v, want 1", got)
	}
}

// TestTargetsJudgeBothHitRates checks the report's judgement: the lowest
// epoch from epoch 2 on counts, epoch 1 (cold) does not, and both the
// node's count and the origin-side figure must reach the target.
func TestTargetsJudgeBothHitRates(t *testing.T) {
	cfg := cfgHalf + "tinylfu"
	row := func(epoch string, hits, misses, gets float64) epochRow {
		return epochRow{config: cfg, epoch: epoch, files: 1000, elapsed: time.Second, bound: 0.5,
			cache: cacheCounts{hits: hits, misses: misses}, originGets: gets}
	}
	rep := &epochsReport{rows: []epochRow{row("1", 50, 1000, 1000), row("2", 480, 520, 520), row("3", 470, 530, 530)}}
	measured, ok := rep.hitGoal(cfg, 0.45)
	if !ok || measured != "47.00% (origin side 47.00%)" {
		t.Errorf("hitGoal = %q, %v; want 47.00%% (origin side 47.00%%), met", measured, ok)
	}
	// The node counts a hit the origin side does not see: not met.
	rep.rows[2].originGets = 560
	if measured, ok = rep.hitGoal(cfg, 0.45); ok || measured != "47.00% (origin side 44.00%)" {
		t.Errorf("hitGoal = %q, %v; want 47.00%% (origin side 44.00%%), not met", measured, ok)
	}
	if _, ok := rep.hitGoal(cfgFits, 0.999); ok {
		t.Error("a configuration without rows met its goal")
	}
}

// TestHeadlineRatiosAndTargets checks the uncapped link's table, its
// ratios per epoch and its two targets, and that the capped link's rows
// stay out of them.
func TestHeadlineRatiosAndTargets(t *testing.T) {
	row := func(link, config, epoch string, perSec float64, p50 time.Duration) epochRow {
		return epochRow{link: link, config: config, epoch: epoch, files: 1000, p50: p50,
			elapsed: time.Duration(float64(time.Second) * 1000 / perSec)}
	}
	rep := &epochsReport{plan: quickEpochsPlan(), fast: uncappedLink(), rows: []epochRow{
		row(linkUncapped, cfgDirect, "1", 1000, 16*time.Millisecond),
		row(linkUncapped, cfgDirect, "2", 1000, 16*time.Millisecond),
		row(linkUncapped, cfgNginx, "1", 950, 17*time.Millisecond),
		row(linkUncapped, cfgNginx, "2", 8000, time.Millisecond),
		row(linkUncapped, cfgFits, "1", 850, 18*time.Millisecond),
		row(linkUncapped, cfgFits, "2", 10000, 800*time.Microsecond),
		row("", cfgDirect, "1", 400, 40*time.Millisecond),
		row("", cfgFits, "1", 380, 42*time.Millisecond),
		row("", cfgFits, "2", 9000, time.Millisecond),
	}}
	md := rep.markdown()
	for _, want := range []string{
		"## Headline: the training link, unlimited per connection, 100MB/s",
		"| " + cfgFits + " | 2 | 10000 | 0.80 ms | 10.00x | 1.25x |",
		"| 1 | 1000 (16.00 ms) | 950 (17.00 ms) | 850 (18.00 ms) | 0.85x | 0.89x | 0.95x |",
		"| 2 | 1000 (16.00 ms) | 8000 (1.00 ms) | 10000 (0.80 ms) | 10.00x | 1.25x | 8.00x |",
		"| cold epoch 1, uncapped link, " + cfgFits + " | 0.85x direct | ≥ 0.90x direct | **no** |",
		"| epoch 2, uncapped link, " + cfgFits + " | 1.25x nginx | ≥ 1.00x nginx | yes |",
		// The capped link's epoch 2 is against its own direct epoch... which
		// this run lacks: n/a, not the uncapped link's.
		"| epoch 2, capped link, " + cfgFits + " | n/a | ≥ 10x direct | n/a |",
		"| " + cfgFits + " | 1 | 380 | 42.00 ms | 0.95x |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}

// TestCostTablePerSample checks the node's cost per sample: CPU and
// faults over the epoch's samples, rows without a node left out, and no
// table at all when no epoch measured one.
func TestCostTablePerSample(t *testing.T) {
	rep := &epochsReport{rows: []epochRow{
		{config: cfgDirect, epoch: "1", files: 1000},
		{link: linkUncapped, config: cfgFits, epoch: "1", files: 1000, cost: nodeCost{cpu: 2 * time.Second, faults: 29_000}},
	}}
	var b strings.Builder
	rep.costTable(&b)
	want := "| " + linkUncapped + " | " + cfgFits + " | 1 | 2ms | 29.0 |\n"
	if !strings.Contains(b.String(), want) || strings.Contains(b.String(), cfgDirect) {
		t.Errorf("cost table:\n%s\nwant the row %q and no direct row", b.String(), want)
	}
	rep.rows = rep.rows[:1]
	b.Reset()
	if rep.costTable(&b); b.Len() != 0 {
		t.Errorf("a cost table without a measured epoch:\n%s", b.String())
	}
}
