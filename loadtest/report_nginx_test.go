// Tests of the reads report's comparison with nginx: the ratios, the p50
// difference and the targets it judges, from made-up results.
package main

import (
	"strings"
	"testing"
	"time"
)

func TestNginxReportTargets(t *testing.T) {
	small := func(target string, ops float64, p50 time.Duration) smallResult {
		return smallResult{set: "4KiB", conc: 16, target: target, n: 1000,
			elapsed: time.Duration(float64(time.Second) * 1000 / ops), p50: p50, p99: 2 * p50}
	}
	large := func(target string, mbps float64) largeResult {
		return largeResult{mode: "single stream", target: target, bytes: 1 << 30,
			elapsed: time.Duration(float64(time.Second) * float64(1<<30) / 1e6 / mbps)}
	}
	rep := &report{plan: quickPlan(), granaryRAM: 1 << 30, targets: localLineup(),
		small: []smallResult{
			small("minio", 5000, 3*time.Millisecond), small("nginx cold", 4000, 4*time.Millisecond),
			small("nginx warm", 20000, time.Millisecond), small("granary cold", 3800, 4*time.Millisecond),
			small("granary warm", 25000, 1400*time.Microsecond), small(granaryUnsigned, 30000, 900*time.Microsecond),
		},
		large: []largeResult{large("minio", 2000), large("nginx cold", 1000), large("nginx warm", 3000),
			large("granary cold", 800), large("granary warm", 4800)},
	}
	rep.small[2].cacheHits = 1000
	md := rep.markdown()
	for _, want := range []string{
		"| 4KiB | 16 | 20000 | 25000 | 1.25x | 1.00 ms | 1.40 ms | +0.40 ms | 30000 | 1.50x | 0.90 ms | 0.95x |",
		"| 1GiB single stream | 3000 | 4800 | 1.60x | n/a | n/a | 1000 | 800 | 0.80x |",
		"| warm 4KiB GETs, 16 clients | 1.25x nginx | ≥ 1.00x nginx | yes |",
		"| warm 4KiB GETs, 16 clients, unsigned as nginx | 1.50x nginx | ≥ 1.00x nginx | yes |",
		"| warm 4KiB p50, 16 clients | 1.40 ms vs 1.00 ms (+0.40 ms) | ≤ nginx + 0.30 ms | **no** |",
		"| warm 1GiB, single stream | 1.60x nginx | ≥ 1.50x nginx | yes |",
		"| first pass, 4KiB GETs, 16 clients | 0.95x nginx | ≥ 0.90x nginx | yes |",
		"| first pass, 1GiB, single stream | 0.80x nginx | ≥ 0.90x nginx | **no** |",
		"nginx answered 1000 of its 1000 warm GETs from its cache",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}

// localLineup is the local lineup's targets as the reads scenario names
// them, without their servers.
func localLineup() []target {
	return []target{{name: "minio", targetKind: kindMinio}, {name: "trivial", targetKind: kindTrivial},
		{name: "nginx", targetKind: kindNginx}, {name: nginxSigned, targetKind: kindNginxSigned}, {name: "granary", targetKind: kindGranary},
		{name: granaryUnsigned, targetKind: kindGranaryUnsigned}}
}

// TestCPUAgainstNginxPairsLikeRequests checks that the CPU comparison
// sets granary's signed pass against nginx read signed and its unsigned
// pass against nginx's warm pass, and judges the signed one, and that the
// signed throughput goal is judged against nginx read signed.
func TestCPUAgainstNginxPairsLikeRequests(t *testing.T) {
	pass := func(target string, cpu time.Duration) smallResult {
		return smallResult{set: "100KiB", conc: 64, target: target, n: 1000, elapsed: time.Second,
			cpu: cpuUse{server: 1000 * cpu, serverMeasured: true}}
	}
	rep := &report{plan: quickPlan(), targets: localLineup(), small: []smallResult{
		pass("nginx cold", 300*time.Microsecond), pass("nginx warm", 30*time.Microsecond),
		pass(nginxSigned, 36*time.Microsecond), pass("granary cold", 200*time.Microsecond),
		pass("granary warm", 40*time.Microsecond), pass(granaryUnsigned, 27*time.Microsecond),
	}}
	// Throughput: granary's signed pass at half nginx signed's rate, a
	// quarter of nginx's unsigned warm pass's.
	rep.small[1].elapsed, rep.small[4].elapsed = time.Second/2, 2*time.Second
	md := rep.markdown()
	for _, want := range []string{
		"| 100KiB | 64 | 1.11x (40 against 36 µs) | 0.90x (27 against 30 µs) |",
		"| CPU per warm 100KiB GET, 64 clients, signed | 1.11x (40 against 36 µs) | ≤ 1.00x nginx read signed | **no** |",
		"| warm 100KiB GETs, 64 clients | 0.50x nginx signed | ≥ 1.00x nginx signed | **no** |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	rep.small[4] = pass("granary warm", 35*time.Microsecond)
	if want := "| 0.97x (35 against 36 µs) | ≤ 1.00x nginx read signed | yes |"; !strings.Contains(rep.markdown(), want) {
		t.Errorf("report lacks %q", want)
	}
}
