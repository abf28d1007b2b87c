// The epochs report's headline: the uncapped link's epochs (direct, nginx
// proxy_cache, granary) with their p50 per sample, the ratios between
// them, and the targets on that link.
package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// headlineConfigs are the headline's configurations, in its order.
var headlineConfigs = []string{cfgDirect, cfgNginx, cfgFits, cfgAnonymous}

// hasHeadline tells whether the run measured the uncapped link.
func (r *epochsReport) hasHeadline() bool {
	return slices.ContainsFunc(r.rows, func(row epochRow) bool { return row.link == linkUncapped })
}

// headline renders the uncapped link's section: one row per epoch of
// each configuration, then the ratios per epoch.
func (r *epochsReport) headline(b *strings.Builder) {
	if !r.hasHeadline() {
		return
	}
	fmt.Fprintf(b, "## Headline: the training link, %s\n\n", r.fast)
	b.WriteString("No per-connection cap: the link the issue measures training with. Direct is minio-go against the proxy; " +
		"nginx is proxy_cache (Debian's nginx, cache on tmpfs, upstream keepalive, proxy_cache_lock) in front of the same proxy, " +
		"started with an empty cache and read with the same minio-go client without credentials (unsigned GETs of a " +
		"public-read bucket); granary is a fresh node whose RAM holds the data set (the capped link's first configuration). " +
		"Hit rate: nginx's X-Cache-Status over its answers, granary's chunk counters.\n\n")
	b.WriteString("| configuration | epoch | samples/s | p50 | vs direct | vs nginx | hit rate |\n|---|---|---:|---:|---:|---:|---:|\n")
	for _, c := range headlineConfigs {
		for _, row := range r.rows {
			if row.link != linkUncapped || row.config != c || row.note != "" {
				continue
			}
			vsNginx, hit := "", "-"
			if c == cfgFits || c == cfgAnonymous {
				vsNginx = ratio(r.versus(row, cfgNginx), 1)
			}
			if c != cfgDirect {
				hit = percent(row.hitRate())
			}
			fmt.Fprintf(b, "| %s | %s | %.0f | %s | %s | %s | %s |\n", c, row.epoch, row.samplesPerSec(), p50(row),
				ratio(r.speedup(row), 1), vsNginx, hit)
		}
	}
	b.WriteString("\n")
	r.headlineRatios(b)
}

// headlineRatios renders, per epoch, the three samples/s and their ratios.
func (r *epochsReport) headlineRatios(b *strings.Builder) {
	b.WriteString("| epoch | direct samples/s (p50) | nginx samples/s (p50) | granary samples/s (p50) | granary / direct | granary / nginx | nginx / direct |\n" +
		"|---|---:|---:|---:|---:|---:|---:|\n")
	for e := 1; ; e++ {
		epoch := strconv.Itoa(e)
		d, n, g := r.findOn(linkUncapped, cfgDirect, epoch), r.findOn(linkUncapped, cfgNginx, epoch), r.findOn(linkUncapped, cfgFits, epoch)
		if d.files == 0 && n.files == 0 && g.files == 0 {
			break
		}
		cell := func(row epochRow) string {
			if row.files == 0 {
				return "n/a"
			}
			return fmt.Sprintf("%.0f (%s)", row.samplesPerSec(), p50(row))
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s |\n", epoch, cell(d), cell(n), cell(g),
			ratio(g.samplesPerSec(), d.samplesPerSec()), ratio(g.samplesPerSec(), n.samplesPerSec()),
			ratio(n.samplesPerSec(), d.samplesPerSec()))
	}
	b.WriteString("\n")
}

// headlineTargets renders the targets on the uncapped link: the
// cold epoch against direct, epoch 2 against nginx.
func (r *epochsReport) headlineTargets(b *strings.Builder) {
	if !r.hasHeadline() {
		return
	}
	cold := r.findOn(linkUncapped, cfgFits, "1")
	s := r.speedup(cold)
	writeGoal(b, "cold epoch 1, uncapped link, "+cfgFits, s >= 0.9, ifSome(s > 0, fmt.Sprintf("%.2fx direct", s)), "≥ 0.90x direct")
	for _, c := range []string{cfgFits, cfgAnonymous} {
		s = r.versus(r.findOn(linkUncapped, c, "2"), cfgNginx)
		writeGoal(b, "epoch 2, uncapped link, "+c, s >= 1, ifSome(s > 0, fmt.Sprintf("%.2fx nginx", s)), "≥ 1.00x nginx")
	}
}

// writeGoal renders one target's row: met (or metText when given) when
// ok, n/a when nothing was measured.
func writeGoal(b *strings.Builder, name string, ok bool, measured, target string, metText ...string) {
	met := map[bool]string{true: "yes", false: "**no**"}[ok]
	if len(metText) > 0 {
		met = metText[0]
	}
	if measured == "" {
		met, measured = "n/a", "n/a"
	}
	fmt.Fprintf(b, "| %s | %s | %s | %s |\n", name, measured, target, met)
}

// p50 renders row's p50 per sample, or "-" when not measured.
func p50(row epochRow) string {
	if row.p50 <= 0 {
		return "-"
	}
	return ms(row.p50)
}
