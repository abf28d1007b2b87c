// The load test's markdown report: absolute numbers per target, then the
// ratios that matter, between targets found by their role (lineup.go):
// the cache under test warm against the origin read directly and the
// ceiling, its cold time against the origin's; against the reference
// cache in report_nginx.go.
package main

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"
)

// report collects a run's results.
type report struct {
	plan    plan
	quick   bool
	started time.Time
	targets []target // in the order measured
	small   []smallResult
	large   []largeResult
	fills   []fillResult // warm reads while a checkpoint lands (reads_fill.go)
	rounds  []roundSet   // the CPU comparison's interleaved rounds (reads_rounds.go)
	// census is the traced passes' system calls (reads_syscalls.go), or
	// censusSkipped why there are none.
	census        []censusRow
	censusSkipped string
	// granaryRAM is the --ram given to the cache under test (roleSubject)
	// when the load test started it; 0 when not. granaryPeakRSS is its
	// VmHWM plus its memory file (peakRSS).
	granaryRAM     int64
	granaryPeakRSS int64
	// loadStart and loadEnd are /proc/loadavg's 1-minute figure at the
	// start and end of the measurements: other work on the machine skews
	// every number, and this tells a reader whether there was some.
	loadStart, loadEnd string
}

func (r *report) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Granary load test\n\n")
	b.WriteString(runStamp(r.started, r.quick))
	fmt.Fprintf(&b, ". %s, read by the same client (net/http, SigV4 headers%s); every body verified. "+
		"Load average (1 min) %s before the measurements, %s after: above the core count, other work competed and the numbers are noisy.\n\n%s\n\n",
		r.where(), r.readNotes(), r.loadStart, r.loadEnd, r.lineupNote())
	r.smallTables(&b)
	r.largeTables(&b)
	r.nginxTables(&b)
	r.nginxTargets(&b)
	r.cpuAgainstReference(&b)
	r.roundsTable(&b)
	r.censusTable(&b)
	r.cpuTable(&b)
	r.fillTable(&b)
	if subj, ok := r.byRole(roleSubject); ok && r.granaryRAM > 0 {
		fmt.Fprintf(&b, "## Memory\n\n%s peak RSS (VmHWM, plus its memory file) %s with --ram %s: %.2fx the budget.\n",
			subj.label(), mib(r.granaryPeakRSS), mib(r.granaryRAM), float64(r.granaryPeakRSS)/float64(r.granaryRAM))
	}
	return b.String()
}

func (r *report) smallTables(b *strings.Builder) {
	fmt.Fprintf(b, "## GET of %d small objects per set\n\n", r.plan.count)
	b.WriteString("| objects | conc | target | ops/s | p50 | p99 |\n|---|---:|---|---:|---:|---:|\n")
	for _, s := range r.small {
		fmt.Fprintf(b, "| %s | %d | %s | %.0f | %s | %s |\n", s.set, s.conc, s.target, s.opsPerSec(), ms(s.p50), ms(s.p99))
	}
	direct, ceiling, ok := r.baselines()
	if !ok {
		b.WriteString("\n")
		return
	}
	fmt.Fprintf(b, "\n| objects | conc | warm / %[1]s (ops/s) | warm / %[2]s (ops/s) | cold time / %[1]s time | warm p99 / %[1]s p99 |\n|---|---:|---:|---:|---:|---:|\n",
		direct.label(), ceiling.label())
	for _, s := range r.small {
		if s.target != direct.name {
			continue
		}
		warm, cold, triv := r.findSmall(s, r.pass(roleSubject, "warm")), r.findSmall(s, r.pass(roleSubject, "cold")), r.findSmall(s, ceiling.name)
		fmt.Fprintf(b, "| %s | %d | %s | %s | %s | %s |\n", s.set, s.conc,
			ratio(warm.opsPerSec(), s.opsPerSec()), ratio(warm.opsPerSec(), triv.opsPerSec()),
			ratio(cold.elapsed.Seconds(), s.elapsed.Seconds()), ratio(float64(warm.p99), float64(s.p99)))
	}
	b.WriteString("\n")
}

func (r *report) largeTables(b *strings.Builder) {
	fmt.Fprintf(b, "## One %s object\n\n", sizeName(r.plan.largeSize))
	b.WriteString("| read | target | MB/s | seconds |\n|---|---|---:|---:|\n")
	for _, l := range r.large {
		fmt.Fprintf(b, "| %s | %s | %.0f | %.2f |\n", l.mode, l.target, l.mbPerSec(), l.elapsed.Seconds())
	}
	direct, ceiling, ok := r.baselines()
	if !ok {
		b.WriteString("\n")
		return
	}
	fmt.Fprintf(b, "\n| read | warm / %[1]s (MB/s) | warm / %[2]s (MB/s) | cold time / %[1]s time |\n|---|---:|---:|---:|\n",
		direct.label(), ceiling.label())
	for _, l := range r.large {
		if l.target != direct.name {
			continue
		}
		warm, cold, triv := r.findLarge(l, r.pass(roleSubject, "warm")), r.findLarge(l, r.pass(roleSubject, "cold")), r.findLarge(l, ceiling.name)
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", l.mode, ratio(warm.mbPerSec(), l.mbPerSec()),
			ratio(warm.mbPerSec(), triv.mbPerSec()), ratio(cold.elapsed.Seconds(), l.elapsed.Seconds()))
	}
	b.WriteString("\n")
}

// baselines returns the targets the cache under test is compared with,
// the origin read directly and the ceiling; ok is false unless the run
// was given all three.
func (r *report) baselines() (direct, ceiling target, ok bool) {
	_, hasSubject := r.byRole(roleSubject)
	direct, hasDirect := r.byRole(roleDirect)
	ceiling, hasCeiling := r.byRole(roleCeiling)
	return direct, ceiling, hasSubject && hasDirect && hasCeiling
}

func (r *report) findSmall(like smallResult, target string) smallResult {
	for _, s := range r.small {
		if s.set == like.set && s.conc == like.conc && s.target == target {
			return s
		}
	}
	return smallResult{}
}

func (r *report) findLarge(like largeResult, target string) largeResult {
	for _, l := range r.large {
		if l.mode == like.mode && l.target == target {
			return l
		}
	}
	return largeResult{}
}

// ratio renders a/b, or "n/a" when either is missing.
func ratio(a, b float64) string {
	if a <= 0 || b <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2fx", a/b)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }

func us(d time.Duration) string { return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond)) }

func mib(n int64) string { return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20)) }

// runStamp is a report's first words: when, on what, and the mode.
func runStamp(started time.Time, quick bool) string {
	return fmt.Sprintf("%s; %s; %s, GOMAXPROCS %d; %s", started.UTC().Format(time.RFC3339), cpuModel(),
		runtime.Version(), runtime.GOMAXPROCS(0), map[bool]string{true: "**quick mode**", false: "full mode"}[quick])
}

// loadAverage returns the 1-minute load average, or "?".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "?"
}

// cpuModel returns the CPU model name from /proc/cpuinfo.
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if name, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(name) == "model name" {
			return fmt.Sprintf("%s x%d", strings.TrimSpace(v), runtime.NumCPU())
		}
	}
	return "unknown CPU"
}
