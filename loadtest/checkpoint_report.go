// The checkpoint scenario's markdown report: one row per save or restore
// (direct, nginx, granary), its speed against the direct path, and the
// issue's targets.
package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/granary-dev/granary/internal/slowproxy"
)

// The rows' targets.
const (
	targetDirect      = "direct (MinIO via the slow link)"
	targetWT          = "granary write-through"
	targetWBAck       = "granary write-back: acknowledged"
	targetWBPersisted = "granary write-back: persisted (flush done)"
	targetWTNow       = "granary write-through bucket, restore started when the save returned"
	targetWTCache     = "granary write-through bucket, restore after the fill settled"
	targetWBNow       = "granary write-back bucket, restore started when the save was acknowledged"
	targetWBCache     = "granary write-back bucket, restore after the fill settled"
	targetCold        = "granary cold: fresh node, empty cache"
)

// The ops of rows that restore one shard alone, and the whole
// checkpoint in ranged GETs (restoreRanged).
const (
	opRestoreOne    = "restore one shard"
	opRestoreRanged = "restore in ranged GETs"
)

// ckptRow is one timed save or restore (of the whole checkpoint, or of
// one shard).
type ckptRow struct {
	op      string // "save" or "restore"
	target  string
	bytes   int64
	elapsed time.Duration
	// originBytes went through the slow link meanwhile (toward the origin
	// for a save, from it for a restore).
	originBytes int64
	// cacheCPU is the cache's CPU time during the step (the granary
	// node, or nginx's workers); 0 for steps no cache served.
	cacheCPU time.Duration
}

// secsPerGiB is the cache's CPU seconds per GiB moved; 0 unmeasured.
func (r ckptRow) secsPerGiB() float64 {
	if r.cacheCPU <= 0 || r.bytes <= 0 {
		return 0
	}
	return r.cacheCPU.Seconds() * float64(1<<30) / float64(r.bytes)
}

// cpuPerGiB is secsPerGiB as text; "-" unmeasured.
func (r ckptRow) cpuPerGiB() string {
	if s := r.secsPerGiB(); s > 0 {
		return fmt.Sprintf("%.2f s", s)
	}
	return "-"
}

func (r ckptRow) mbPerSec() float64 { return float64(r.bytes) / 1e6 / r.elapsed.Seconds() }

// rssNote is one granary process's peak RSS.
type rssNote struct {
	phase string
	bytes int64
}

// fillNote is how long a node's background cache fill ran on after a step.
type fillNote struct {
	after string
	took  time.Duration
}

// ckptReport collects a checkpoint run's results.
type ckptReport struct {
	plan       ckptPlan
	slow       slowproxy.Options
	quick      bool
	started    time.Time
	rows       []ckptRow
	granaryRAM int64 // --ram given to granary; 0 when not measured
	rss        []rssNote
	fills      []fillNote
	// held is how long the write-back uploads waited for the restore
	// started when the save was acknowledged (the node's
	// granary_writeback_held_seconds_total, summed over upload bodies);
	// negative when not measured.
	held               time.Duration
	loadStart, loadEnd string // as in report
}

// find returns the row of op and target, or a zero row.
func (r *ckptReport) find(op, target string) ckptRow {
	for _, row := range r.rows {
		if row.op == op && row.target == target {
			return row
		}
	}
	return ckptRow{}
}

// speedup is how many times faster row was than the direct row of its op.
func (r *ckptReport) speedup(row ckptRow) float64 {
	d := r.find(row.op, targetDirect)
	if d.elapsed <= 0 || row.elapsed <= 0 {
		return 0
	}
	return d.elapsed.Seconds() / row.elapsed.Seconds()
}

func (r *ckptReport) markdown() string {
	var b strings.Builder
	p := r.plan
	fmt.Fprintf(&b, "# Granary checkpoint save and restore\n\n")
	b.WriteString(runStamp(r.started, r.quick))
	fmt.Fprintf(&b, ". A %s checkpoint of %d shards of %s (random bytes), saved and restored with every shard at once "+
		"as a training job's ranks would, by minio-go with the same options for every target (PutObject's default "+
		"multipart upload, parts in parallel; one GET stream per shard); every restored shard's sha256 verified. "+
		"The origin is MinIO behind a throttling proxy standing in for a remote object store: %s. "+
		"Granary's origin is the same proxy, and so is that of nginx proxy_cache, the reference cache (Debian's nginx, cache on tmpfs): "+
		"the save goes through nginx signed for the origin and passed on unchanged (nginx caches no writes), and its restores are "+
		"unsigned GETs of a public-read bucket. A restore \"started when the save returned\" begins the moment the last shard's save "+
		"is acknowledged, as a training job restarting after a pre-emption does; the write-back bucket's `granary flush` runs beside it. "+
		"Load average (1 min) %s before, %s after.\n\n",
		sizeName(p.total()), p.shards, sizeName(p.shardSize), r.slow, r.loadStart, r.loadEnd)
	b.WriteString("| step | target | seconds | MB/s | speed vs direct | through the slow link | cache CPU per GiB |\n|---|---|---:|---:|---:|---:|---:|\n")
	for _, row := range r.rows {
		fmt.Fprintf(&b, "| %s | %s | %.2f | %.0f | %s | %s | %s |\n", row.op, row.target, row.elapsed.Seconds(),
			row.mbPerSec(), ratio(r.speedup(row), 1), mib(row.originBytes), row.cpuPerGiB())
	}
	b.WriteString("\nThe slow link's column is what crossed it during the step: a restore from the cache should carry almost nothing. " +
		"The last is the cache's CPU time during the step (/proc/PID/task/*/schedstat: the granary node, or nginx's workers) per GiB of checkpoint: " +
		"a granary save's, until it returns, covers the client's bytes in, the upload to the origin " + payloadNote() + " and the local copy; " +
		"the fill after it is not in it; the write-back save until flushed has none, as the restore beside it ran meanwhile.\n\n")
	if len(r.fills) > 0 {
		b.WriteString("A restore \"after the fill settled\" starts once the node's background cache fill is done, as with checkpoints minutes apart " +
			"(it follows the restore started when the save returned, which may have filled some of the cache itself). The fill ran on for:")
		for i, f := range r.fills {
			fmt.Fprintf(&b, "%s %.2f s after %s", map[bool]string{true: ",", false: ""}[i > 0], f.took.Seconds(), f.after)
		}
		b.WriteString(".\n\n")
	}
	if r.held >= 0 && r.granaryRAM > 0 {
		fmt.Fprintf(&b, "While the restore started when the write-back save was acknowledged ran, the uploads to the origin gave way to it: "+
			"their bodies waited %.2f s in all (summed over the parts in flight; granary_writeback_held_seconds_total).\n\n", r.held.Seconds())
	}
	if r.granaryRAM > 0 {
		r.targets(&b)
		fmt.Fprintf(&b, "## Memory\n\ngranary --ram %s; peak RSS (VmHWM, plus its memory file):", mib(r.granaryRAM))
		for i, n := range r.rss {
			fmt.Fprintf(&b, "%s %s during the %s", map[bool]string{true: ",", false: ""}[i > 0], mib(n.bytes), n.phase)
		}
		b.WriteString(".\n")
	}
	return b.String()
}

// targets renders the goals against the measurements: speed-ups
// over direct for the cache restores and the write-back save, the time
// against direct for the write-through save.
func (r *ckptReport) targets(b *strings.Builder) {
	b.WriteString("## The issue's targets\n\n| goal | measured | target | met |\n|---|---:|---:|---|\n")
	goal := func(name string, got float64, measured, target string, ok bool) {
		met := map[bool]string{true: "yes", false: "**no**"}[ok]
		if got <= 0 {
			met, measured = "n/a", "n/a"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", name, measured, target, met)
	}
	for _, t := range []string{targetWTNow, targetWBNow} {
		s := r.speedup(r.find("restore", t))
		goal(t, s, fmt.Sprintf("%.2fx faster", s), "≥ 15x faster", s >= 15)
	}
	for _, t := range []string{targetWTCache, targetWBCache} {
		s := r.speedup(r.find("restore", t))
		goal(t, s, fmt.Sprintf("%.2fx faster", s), "≥ 10x faster", s >= 10)
	}
	s := r.speedup(r.find("save", targetWBAck))
	goal("write-back save, acknowledged", s, fmt.Sprintf("%.2fx faster", s), "≥ 5x faster", s >= 5)
	if s = r.speedup(r.find("save", targetWT)); s > 0 {
		s = 1 / s
	}
	goal("write-through save", s, fmt.Sprintf("%.2fx the time", s), "≤ 1.15x the time", s <= 1.15)
	r.againstNginx(goal)
	b.WriteString("\n")
}

// againstNginx renders the cached restores' goals against the reference
// cache's: granary's restores after the fill settled (of the
// write-through bucket, every chunk cached), whole and in ranged GETs,
// against nginx's cached ones, by speed and by the cache's CPU per GiB. Where the client and
// the caches share cores, the speed is the client's as much as either
// cache's; the CPU per GiB is the cache's own on any machine.
func (r *ckptReport) againstNginx(goal func(string, float64, string, string, bool)) {
	for _, op := range []string{"restore", opRestoreRanged} {
		name := "second restore from the cache"
		if op == opRestoreRanged {
			name = fmt.Sprintf("restore from the cache in %d ranged GETs", r.plan.shards*ckptRanges)
		}
		g, n := r.find(op, targetWTCache), r.find(op, targetNginxSecond)
		speed := 0.0
		if g.elapsed > 0 && n.elapsed > 0 {
			speed = n.elapsed.Seconds() / g.elapsed.Seconds()
		}
		goal(name+", speed against nginx's", speed, fmt.Sprintf("%.2fx", speed), "≥ 1.00x", speed >= 1)
		cpu, measured := 0.0, ""
		if gs, ns := g.secsPerGiB(), n.secsPerGiB(); gs > 0 && ns > 0 {
			cpu, measured = gs/ns, fmt.Sprintf("%.2fx (%.2f against %.2f s)", gs/ns, gs, ns)
		}
		goal(name+", CPU per GiB against nginx's", cpu, measured, "≤ 1.00x", cpu > 0 && cpu <= 1)
	}
}

// payloadNote says how the nodes sent their uploads (-origin-payload).
func payloadNote() string {
	if originPayload == "crc32c" {
		return "(unsigned, with a CRC32C trailer: payload=crc32c)"
	}
	return "(signed by minio-go with SHA-256, the default over plain HTTP)"
}
