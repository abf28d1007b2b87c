// The reads report's comparison with the reference cache (nginx
// proxy_cache in the local lineup): the cache under test (granary)
// against the reference warm and cold for every small set and large
// read, and the targets against the reference. Both are found by
// their role (lineup.go).
package main

import (
	"fmt"
	"strings"
	"time"
)

// nginxP50Slack is how far the subject's warm p50 at 16 clients may be
// above the reference's (the target).
const nginxP50Slack = 300 * time.Microsecond

// hasNginx tells whether the run measured the reference's warm pass.
func (r *report) hasNginx() bool {
	warm := r.pass(roleReference, "warm")
	for _, s := range r.small {
		if warm != "" && s.target == warm {
			return true
		}
	}
	return false
}

// compared returns the cache under test and the reference; ok is false
// unless the run measured both.
func (r *report) compared() (subj, ref target, ok bool) {
	subj, hasSubject := r.byRole(roleSubject)
	ref, _ = r.byRole(roleReference)
	return subj, ref, hasSubject && r.hasNginx()
}

// nginxTables renders the subject against the reference, small sets then
// large reads.
func (r *report) nginxTables(b *strings.Builder) {
	subj, ref, ok := r.compared()
	if !ok {
		return
	}
	S, R := subj.label(), ref.label()
	fmt.Fprintf(b, "## %s against %s\n\n%s\n\n", subj.headingName(), ref.headingName(), ref.about)
	fmt.Fprintf(b, "| objects | conc | %[2]s warm ops/s | %[1]s warm ops/s | %[1]s / %[2]s | %[2]s p50 | %[1]s p50 | p50 difference | %[1]s unsigned ops/s | unsigned / %[2]s | unsigned p50 | %[1]s first pass / %[2]s first pass |\n"+
		"|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n", S, R)
	for _, s := range r.small {
		if s.target != r.pass(roleReference, "warm") {
			continue
		}
		g, nc, gc := r.findSmall(s, r.pass(roleSubject, "warm")), r.findSmall(s, r.pass(roleReference, "cold")), r.findSmall(s, r.pass(roleSubject, "cold"))
		u, uOps, uRatio, uP50 := r.findSmall(s, r.pass(roleSubjectUnsigned, "")), "n/a", "n/a", "n/a"
		if u.n > 0 {
			uOps, uRatio, uP50 = fmt.Sprintf("%.0f", u.opsPerSec()), ratio(u.opsPerSec(), s.opsPerSec()), ms(u.p50)
		}
		fmt.Fprintf(b, "| %s | %d | %.0f | %.0f | %s | %s | %s | %+.2f ms | %s | %s | %s | %s |\n", s.set, s.conc, s.opsPerSec(), g.opsPerSec(),
			ratio(g.opsPerSec(), s.opsPerSec()), ms(s.p50), ms(g.p50), float64(g.p50-s.p50)/float64(time.Millisecond),
			uOps, uRatio, uP50, ratio(gc.opsPerSec(), nc.opsPerSec()))
	}
	fmt.Fprintf(b, "\n| read | %[2]s warm MB/s | %[1]s warm MB/s | %[1]s / %[2]s | %[1]s unsigned MB/s | unsigned / %[2]s | %[2]s first pass MB/s | %[1]s first pass MB/s | %[1]s first pass / %[2]s first pass |\n"+
		"|---|---:|---:|---:|---:|---:|---:|---:|---:|\n", S, R)
	for _, l := range r.large {
		if l.target != r.pass(roleReference, "warm") {
			continue
		}
		g, nc, gc := r.findLarge(l, r.pass(roleSubject, "warm")), r.findLarge(l, r.pass(roleReference, "cold")), r.findLarge(l, r.pass(roleSubject, "cold"))
		u, uMBps, uRatio := r.findLarge(l, r.pass(roleSubjectUnsigned, "")), "n/a", "n/a"
		if u.bytes > 0 {
			uMBps, uRatio = fmt.Sprintf("%.0f", u.mbPerSec()), ratio(u.mbPerSec(), l.mbPerSec())
		}
		fmt.Fprintf(b, "| %s %s | %.0f | %.0f | %s | %s | %s | %.0f | %.0f | %s |\n", sizeName(l.bytes), l.mode, l.mbPerSec(), g.mbPerSec(),
			ratio(g.mbPerSec(), l.mbPerSec()), uMBps, uRatio, nc.mbPerSec(), gc.mbPerSec(), ratio(gc.mbPerSec(), nc.mbPerSec()))
	}
	b.WriteString("\n")
	r.nginxHitNote(b, ref)
}

// nginxHitNote says how many of the reference's warm answers were cache
// hits: a warm pass that is not all hits measured the origin, not the
// cache.
func (r *report) nginxHitNote(b *strings.Builder, ref target) {
	var hits, all int64
	warm := r.pass(roleReference, "warm")
	for _, s := range r.small {
		if s.target == warm {
			hits, all = hits+s.cacheHits, all+s.cacheHits+s.cacheOthers
		}
	}
	for _, l := range r.large {
		if l.target == warm {
			hits, all = hits+l.cacheHits, all+l.cacheHits+l.cacheOthers
		}
	}
	fmt.Fprintf(b, "%s answered %d of its %d warm GETs from its cache (X-Cache-Status: HIT).\n\n", ref.label(), hits, all)
}

// nginxTargets renders the targets against the reference.
func (r *report) nginxTargets(b *strings.Builder) {
	_, ref, ok := r.compared()
	if !ok {
		return
	}
	R := ref.label()
	fmt.Fprintf(b, "## The issue's targets against %s\n\n| goal | measured | target | met |\n|---|---:|---:|---|\n", R)
	goal := func(name, measured, target string, ok, have bool) {
		met := map[bool]string{true: "yes", false: "**no**"}[ok]
		if !have {
			measured, met = "n/a", "n/a"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", name, measured, target, met)
	}
	warm, gWarm := r.pass(roleReference, "warm"), r.pass(roleSubject, "warm")
	for _, s := range r.small {
		if s.target != warm {
			continue
		}
		g := r.findSmall(s, gWarm)
		// The signed pass against the reference read with the same signed
		// GETs when the run has that pass (the client's signing then
		// weighs on both), else against its warm pass.
		ref, refName := s, R
		if signed := r.findSmall(s, r.pass(roleReferenceSigned, "")); signed.n > 0 {
			ref, refName = signed, R+" signed"
		}
		x := g.opsPerSec() / ref.opsPerSec()
		goal(fmt.Sprintf("warm %s GETs, %d clients", s.set, s.conc), fmt.Sprintf("%.2fx %s", x, refName), fmt.Sprintf("≥ 1.00x %s", refName), x >= 1, g.n > 0)
		u := r.findSmall(s, r.pass(roleSubjectUnsigned, ""))
		x = u.opsPerSec() / s.opsPerSec()
		goal(fmt.Sprintf("warm %s GETs, %d clients, unsigned as %s", s.set, s.conc, R), fmt.Sprintf("%.2fx %s", x, R), fmt.Sprintf("≥ 1.00x %s", R), x >= 1, u.n > 0)
		if s.conc == 16 {
			d := g.p50 - ref.p50
			goal(fmt.Sprintf("warm %s p50, 16 clients", s.set), fmt.Sprintf("%s vs %s (%+.2f ms)", ms(g.p50), ms(ref.p50), float64(d)/float64(time.Millisecond)),
				fmt.Sprintf("≤ %s + 0.30 ms", refName), d <= nginxP50Slack, g.n > 0)
		}
	}
	for _, l := range r.large {
		if l.target != warm {
			continue
		}
		g := r.findLarge(l, gWarm)
		x := g.mbPerSec() / l.mbPerSec()
		goal(fmt.Sprintf("warm %s, %s", sizeName(l.bytes), l.mode), fmt.Sprintf("%.2fx %s", x, R), fmt.Sprintf("≥ 1.50x %s", R), x >= 1.5, g.bytes > 0)
	}
	r.coldTargets(goal, R)
	r.cpuTargets(goal, R)
	b.WriteString("\n")
}

// coldTargets adds the first-pass goals: the subject's first pass against
// the reference's (named R), for every small set and large read.
func (r *report) coldTargets(goal func(name, measured, target string, ok, have bool), R string) {
	cold, gCold := r.pass(roleReference, "cold"), r.pass(roleSubject, "cold")
	for _, s := range r.small {
		if s.target != cold {
			continue
		}
		g := r.findSmall(s, gCold)
		x := g.opsPerSec() / s.opsPerSec()
		goal(fmt.Sprintf("first pass, %s GETs, %d clients", s.set, s.conc), fmt.Sprintf("%.2fx %s", x, R), fmt.Sprintf("≥ 0.90x %s", R), x >= 0.9, g.n > 0)
	}
	for _, l := range r.large {
		if l.target != cold {
			continue
		}
		g := r.findLarge(l, gCold)
		x := g.mbPerSec() / l.mbPerSec()
		goal(fmt.Sprintf("first pass, %s, %s", sizeName(l.bytes), l.mode), fmt.Sprintf("%.2fx %s", x, R), fmt.Sprintf("≥ 0.90x %s", R), x >= 0.9, g.bytes > 0)
	}
}
