// The load test's markdown report: absolute numbers per target, then the
// ratios that matter (granary warm against MinIO and the trivial server,
// granary cold time against MinIO time; against nginx in report_nginx.go).
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
	plan           plan
	quick          bool
	started        time.Time
	small          []smallResult
	large          []largeResult
	granaryRAM     int64 // --ram given to granary; 0 when not measured
	granaryPeakRSS int64 // VmHWM
	// loadStart and loadEnd are /proc/loadavg's 1-minute figure at the
	// start and end of the measurements: other work on the machine skews
	// every number, and this tells a reader whether there was some.
	loadStart, loadEnd string
}

func (r *report) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Granary load test\n\n")
	b.WriteString(runStamp(r.started, r.quick))
	fmt.Fprintf(&b, ". Every target on loopback, read by the same client (net/http, SigV4 headers; unsigned GETs for nginx); every body verified. "+
		"Load average (1 min) %s before the measurements, %s after: above the core count, other work competed and the numbers are noisy.\n\n",
		r.loadStart, r.loadEnd)
	r.smallTables(&b)
	r.largeTables(&b)
	r.nginxTables(&b)
	r.nginxTargets(&b)
	r.cpuTable(&b)
	if r.granaryRAM > 0 {
		fmt.Fprintf(&b, "## Memory\n\ngranary peak RSS (VmHWM) %s with --ram %s: %.2fx the budget.\n",
			mib(r.granaryPeakRSS), mib(r.granaryRAM), float64(r.granaryPeakRSS)/float64(r.granaryRAM))
	}
	return b.String()
}

func (r *report) smallTables(b *strings.Builder) {
	fmt.Fprintf(b, "## GET of %d small objects per set\n\n", r.plan.count)
	b.WriteString("| objects | conc | target | ops/s | p50 | p99 |\n|---|---:|---|---:|---:|---:|\n")
	for _, s := range r.small {
		fmt.Fprintf(b, "| %s | %d | %s | %.0f | %s | %s |\n", s.set, s.conc, s.target, s.opsPerSec(), ms(s.p50), ms(s.p99))
	}
	if !r.hasGranary() {
		b.WriteString("\n")
		return
	}
	b.WriteString("\n| objects | conc | warm / MinIO (ops/s) | warm / trivial (ops/s) | cold time / MinIO time | warm p99 / MinIO p99 |\n|---|---:|---:|---:|---:|---:|\n")
	for _, s := range r.small {
		if s.target != "minio" {
			continue
		}
		warm, cold, triv := r.findSmall(s, "granary warm"), r.findSmall(s, "granary cold"), r.findSmall(s, "trivial")
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
	if !r.hasGranary() {
		b.WriteString("\n")
		return
	}
	b.WriteString("\n| read | warm / MinIO (MB/s) | warm / trivial (MB/s) | cold time / MinIO time |\n|---|---:|---:|---:|\n")
	for _, l := range r.large {
		if l.target != "minio" {
			continue
		}
		warm, cold, triv := r.findLarge(l, "granary warm"), r.findLarge(l, "granary cold"), r.findLarge(l, "trivial")
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", l.mode, ratio(warm.mbPerSec(), l.mbPerSec()),
			ratio(warm.mbPerSec(), triv.mbPerSec()), ratio(cold.elapsed.Seconds(), l.elapsed.Seconds()))
	}
	b.WriteString("\n")
}

func (r *report) hasGranary() bool { return r.granaryRAM > 0 }

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
