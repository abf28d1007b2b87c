// The reads report's comparison with nginx proxy_cache, the reference
// cache: granary against nginx warm and cold for every small set and
// large read, and the targets against nginx.
package main

import (
	"fmt"
	"strings"
	"time"
)

// nginxP50Slack is how far granary's warm p50 at 16 clients may be above
// nginx's (the target).
const nginxP50Slack = 300 * time.Microsecond

// hasNginx tells whether the run measured nginx.
func (r *report) hasNginx() bool {
	for _, s := range r.small {
		if s.target == "nginx warm" {
			return true
		}
	}
	return false
}

// nginxTables renders granary against nginx, small sets then large reads.
func (r *report) nginxTables(b *strings.Builder) {
	if !r.hasGranary() || !r.hasNginx() {
		return
	}
	b.WriteString("## Granary against nginx proxy_cache\n\n" +
		"nginx (Debian's, proxy_cache on tmpfs in front of the same MinIO, upstream keepalive, proxy_cache_lock) " +
		"is read with unsigned GETs of a public-read bucket, so it does less work per request than granary, which checks " +
		"every SigV4 signature. First pass: both caches empty.\n\n")
	b.WriteString("| objects | conc | nginx warm ops/s | granary warm ops/s | granary / nginx | nginx p50 | granary p50 | p50 difference | granary unsigned ops/s | unsigned / nginx | unsigned p50 | granary first pass / nginx first pass |\n" +
		"|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, s := range r.small {
		if s.target != "nginx warm" {
			continue
		}
		g, nc, gc := r.findSmall(s, "granary warm"), r.findSmall(s, "nginx cold"), r.findSmall(s, "granary cold")
		u, uOps, uRatio, uP50 := r.findSmall(s, granaryUnsigned), "n/a", "n/a", "n/a"
		if u.n > 0 {
			uOps, uRatio, uP50 = fmt.Sprintf("%.0f", u.opsPerSec()), ratio(u.opsPerSec(), s.opsPerSec()), ms(u.p50)
		}
		fmt.Fprintf(b, "| %s | %d | %.0f | %.0f | %s | %s | %s | %+.2f ms | %s | %s | %s | %s |\n", s.set, s.conc, s.opsPerSec(), g.opsPerSec(),
			ratio(g.opsPerSec(), s.opsPerSec()), ms(s.p50), ms(g.p50), float64(g.p50-s.p50)/float64(time.Millisecond),
			uOps, uRatio, uP50, ratio(gc.opsPerSec(), nc.opsPerSec()))
	}
	b.WriteString("\n| read | nginx warm MB/s | granary warm MB/s | granary / nginx | granary unsigned MB/s | unsigned / nginx | nginx first pass MB/s | granary first pass MB/s | granary first pass / nginx first pass |\n" +
		"|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, l := range r.large {
		if l.target != "nginx warm" {
			continue
		}
		g, nc, gc := r.findLarge(l, "granary warm"), r.findLarge(l, "nginx cold"), r.findLarge(l, "granary cold")
		u, uMBps, uRatio := r.findLarge(l, granaryUnsigned), "n/a", "n/a"
		if u.bytes > 0 {
			uMBps, uRatio = fmt.Sprintf("%.0f", u.mbPerSec()), ratio(u.mbPerSec(), l.mbPerSec())
		}
		fmt.Fprintf(b, "| %s %s | %.0f | %.0f | %s | %s | %s | %.0f | %.0f | %s |\n", sizeName(l.bytes), l.mode, l.mbPerSec(), g.mbPerSec(),
			ratio(g.mbPerSec(), l.mbPerSec()), uMBps, uRatio, nc.mbPerSec(), gc.mbPerSec(), ratio(gc.mbPerSec(), nc.mbPerSec()))
	}
	b.WriteString("\n")
	r.nginxHitNote(b)
}

// nginxHitNote says how many of nginx's warm answers were cache hits: a
// warm pass that is not all hits measured the origin, not the cache.
func (r *report) nginxHitNote(b *strings.Builder) {
	var hits, all int64
	for _, s := range r.small {
		if s.target == "nginx warm" {
			hits, all = hits+s.cacheHits, all+s.cacheHits+s.cacheOthers
		}
	}
	for _, l := range r.large {
		if l.target == "nginx warm" {
			hits, all = hits+l.cacheHits, all+l.cacheHits+l.cacheOthers
		}
	}
	fmt.Fprintf(b, "nginx answered %d of its %d warm GETs from its cache (X-Cache-Status: HIT).\n\n", hits, all)
}

// nginxTargets renders the targets against nginx.
func (r *report) nginxTargets(b *strings.Builder) {
	if !r.hasGranary() || !r.hasNginx() {
		return
	}
	b.WriteString("## The issue's targets against nginx\n\n| goal | measured | target | met |\n|---|---:|---:|---|\n")
	goal := func(name, measured, target string, ok, have bool) {
		met := map[bool]string{true: "yes", false: "**no**"}[ok]
		if !have {
			measured, met = "n/a", "n/a"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", name, measured, target, met)
	}
	for _, s := range r.small {
		if s.target != "nginx warm" {
			continue
		}
		g := r.findSmall(s, "granary warm")
		x := g.opsPerSec() / s.opsPerSec()
		goal(fmt.Sprintf("warm %s GETs, %d clients", s.set, s.conc), fmt.Sprintf("%.2fx nginx", x), "≥ 1.00x nginx", x >= 1, g.n > 0)
		u := r.findSmall(s, granaryUnsigned)
		x = u.opsPerSec() / s.opsPerSec()
		goal(fmt.Sprintf("warm %s GETs, %d clients, unsigned as nginx", s.set, s.conc), fmt.Sprintf("%.2fx nginx", x), "≥ 1.00x nginx", x >= 1, u.n > 0)
		if s.conc == 16 {
			d := g.p50 - s.p50
			goal(fmt.Sprintf("warm %s p50, 16 clients", s.set), fmt.Sprintf("%s vs %s (%+.2f ms)", ms(g.p50), ms(s.p50), float64(d)/float64(time.Millisecond)),
				"≤ nginx + 0.30 ms", d <= nginxP50Slack, g.n > 0)
		}
	}
	for _, l := range r.large {
		if l.target != "nginx warm" {
			continue
		}
		g := r.findLarge(l, "granary warm")
		x := g.mbPerSec() / l.mbPerSec()
		goal(fmt.Sprintf("warm %s, %s", sizeName(l.bytes), l.mode), fmt.Sprintf("%.2fx nginx", x), "≥ 1.50x nginx", x >= 1.5, g.bytes > 0)
	}
	r.coldTargets(goal)
	b.WriteString("\n")
}

// coldTargets adds the first-pass goals: granary's first pass against
// nginx's, for every small set and large read.
func (r *report) coldTargets(goal func(name, measured, target string, ok, have bool)) {
	for _, s := range r.small {
		if s.target != "nginx cold" {
			continue
		}
		g := r.findSmall(s, "granary cold")
		x := g.opsPerSec() / s.opsPerSec()
		goal(fmt.Sprintf("first pass, %s GETs, %d clients", s.set, s.conc), fmt.Sprintf("%.2fx nginx", x), "≥ 0.90x nginx", x >= 0.9, g.n > 0)
	}
	for _, l := range r.large {
		if l.target != "nginx cold" {
			continue
		}
		g := r.findLarge(l, "granary cold")
		x := g.mbPerSec() / l.mbPerSec()
		goal(fmt.Sprintf("first pass, %s, %s", sizeName(l.bytes), l.mode), fmt.Sprintf("%.2fx nginx", x), "≥ 0.90x nginx", x >= 0.9, g.bytes > 0)
	}
}
