// The origin-faults scenario's markdown report: per phase, cached GETs/s
// and p99 against the healthy phase (targets >= 0.9x and p99 < 2x), how
// fast misses fail once the breaker is open (target < 100 ms), and the
// time to recover once the origin returns.
package main

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Targets of the scenario.
const (
	faultsRateTarget = 0.9                    // cached GETs/s against healthy
	faultsP99Target  = 2.0                    // cached p99 against healthy, at most
	faultsMissTarget = 100 * time.Millisecond // a miss once the breaker is open
)

// faultsReport collects an origin-faults run's results.
type faultsReport struct {
	plan               faultsPlan
	quick              bool
	started            time.Time
	phases             []faultsPhase
	recovery           time.Duration
	loadStart, loadEnd string
}

// median is the phase's median pass by rate.
func (p faultsPhase) median() smallResult {
	passes := slices.Clone(p.passes)
	slices.SortFunc(passes, func(a, b smallResult) int { return cmp.Compare(a.opsPerSec(), b.opsPerSec()) })
	return passes[(len(passes)-1)/2]
}

func (r *faultsReport) markdown() string {
	var b strings.Builder
	p := r.plan
	b.WriteString("# Granary with a sick origin\n\n")
	b.WriteString(runStamp(r.started, r.quick))
	fmt.Fprintf(&b, ". One `granary serve` node on loopback, --ram %s, no disk tier, --ttl %v (every phase reads metadata past it), "+
		"--origin-timeout %v, in front of MinIO through a fault proxy. %d objects of %s, warmed, read by %d concurrent keep-alive "+
		"clients (SigV4, every byte checked), %d pass(es) per phase, the median pass shown. Phases: healthy; hung (the proxy "+
		"accepts TCP and never answers); refused (nothing listens); back. Each phase reads first, then asks for misses (objects "+
		"nobody read) until one is refused at once, and times the misses after it. "+
		"Load average (1 min) %s before, %s after.\n\n",
		mib(p.ram), faultsTTL, faultsTimeout, p.count, sizeName(int64(p.size)), p.conc, p.rounds, r.loadStart, r.loadEnd)
	if len(r.phases) == 0 {
		return b.String()
	}
	healthy := r.phases[0].median()
	b.WriteString("| phase | cached GET/s | vs healthy | p50 | p99 | p99 vs healthy | targets |\n|---|---:|---:|---:|---:|---:|---|\n")
	for _, ph := range r.phases {
		m := ph.median()
		rate, p99 := m.opsPerSec()/healthy.opsPerSec(), float64(m.p99)/float64(healthy.p99)
		met := "met"
		if rate < faultsRateTarget || p99 >= faultsP99Target {
			met = "**missed**"
		}
		if ph.name == "healthy" {
			met = "baseline"
		}
		fmt.Fprintf(&b, "| %s | %.0f | %.2fx | %s | %s | %.2fx | >= %.1fx, p99 < %.0fx: %s |\n",
			ph.name, m.opsPerSec(), rate, ms(m.p50), ms(m.p99), p99, faultsRateTarget, faultsP99Target, met)
	}
	b.WriteString("\n| phase | breaker open by (after the fault) | misses once open: p50 | p99 | max | answers | target |\n|---|---:|---:|---:|---:|---|---|\n")
	for _, ph := range r.phases {
		if ph.missCodes == nil {
			continue
		}
		met := "met"
		if ph.missP99 >= faultsMissTarget {
			met = "**missed**"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | p99 < %v: %s |\n", ph.name, ph.breakerOpen.Round(time.Millisecond),
			ms(ph.missP50), ms(ph.missP99), ms(ph.missMax), codes(ph.missCodes), faultsMissTarget, met)
	}
	fmt.Fprintf(&b, "\nRecovery: a miss was served again %s after the origin returned (the breaker's probe runs every second).\n\n",
		r.recovery.Round(time.Millisecond))
	return b.String()
}

// codes renders status counts, e.g. "50 x 503".
func codes(m map[int]int) string {
	var parts []string
	for _, c := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%d x %d", m[c], c))
	}
	return strings.Join(parts, ", ")
}
