// Tests that each dashboard panel speaks one unit: every query of a panel
// measures what the panel's unit says (bytes, bytes per second, events
// per second, a share, seconds, cores or a plain count), and no override
// gives a query another unit. Also that each alert has a promtool case in
// which it fires.
package deploy

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// unitFamilies maps each unit the dashboard may use to what it measures.
var unitFamilies = map[string]string{
	"bytes": "bytes", "Bps": "bytes/s", "ops": "events/s", "reqps": "events/s",
	"percentunit": "share", "s": "seconds", "suffix: cores": "cores", "none": "count", "short": "count",
}

var (
	rateOf = regexp.MustCompile(`\b(?:i?rate)\((?:[a-z_]+)(?:_bytes_total|_seconds_total|_total)\b`)
	gaugeB = regexp.MustCompile(`\b[a-z_]+_bytes\b`)
)

// exprFamily says what a query measures, from its shape: a quantile is
// seconds, a quotient a share, a rate of a byte counter bytes per second,
// of a seconds counter cores, of another counter events per second; an
// increase is a count; a gauge named _bytes is bytes; else a count.
func exprFamily(e string) string {
	switch {
	case strings.Contains(e, "histogram_quantile("):
		return "seconds"
	case strings.Contains(e, "/"):
		return "share"
	}
	if m := rateOf.FindString(e); m != "" {
		switch {
		case strings.HasSuffix(m, "_bytes_total"):
			return "bytes/s"
		case strings.HasSuffix(m, "_seconds_total"):
			return "cores"
		default:
			return "events/s"
		}
	}
	switch {
	case strings.Contains(e, "increase("):
		return "count"
	case gaugeB.MatchString(e):
		return "bytes"
	}
	return "count"
}

func TestExprFamily(t *testing.T) {
	for e, want := range map[string]string{
		`histogram_quantile(0.5, sum by (le) (rate(x_bucket[5m])))`:   "seconds",
		`sum(rate(a_total[5m])) / sum(rate(b_total[5m]))`:             "share",
		`sum(rate(granary_warm_fetched_bytes_total{job=~".*"}[5m]))`:  "bytes/s",
		`sum(rate(process_cpu_seconds_total[5m]))`:                    "cores",
		`sum by (result) (rate(granary_writeback_uploads_total[5m]))`: "events/s",
		`sum by (state) (increase(granary_warm_jobs_total[1h]))`:      "count",
		`granary_writeback_dirty_bytes`:                               "bytes",
		`granary_cluster_members`:                                     "count",
	} {
		if got := exprFamily(e); got != want {
			t.Errorf("exprFamily(%s) = %s, want %s", e, got, want)
		}
	}
}

// TestDashboardUnits: one unit per panel, which each of its queries
// measures.
func TestDashboardUnits(t *testing.T) {
	for _, p := range readDashboard(t).Panels {
		if p.Type == "row" {
			continue
		}
		unit := p.FieldConfig.Defaults.Unit
		fam, ok := unitFamilies[unit]
		if !ok {
			t.Errorf("panel %q: unit %q is not one the dashboard uses", p.Title, unit)
			continue
		}
		for _, o := range p.FieldConfig.Overrides {
			for _, prop := range o.Properties {
				if prop.ID == "unit" {
					t.Errorf("panel %q: an override changes the unit", p.Title)
				}
			}
		}
		for _, tg := range p.Targets {
			if got := exprFamily(grafanaVars.Replace(tg.Expr)); got != fam {
				t.Errorf("panel %q (unit %s, %s): query measures %s: %s", p.Title, unit, fam, got, tg.Expr)
			}
		}
	}
}

// TestDashboardPanels: the panels an operator looks for are there.
func TestDashboardPanels(t *testing.T) {
	var titles []string
	for _, p := range readDashboard(t).Panels {
		titles = append(titles, p.Title)
	}
	for _, want := range []string{"Origin up, breaker open", "Origin requests by result", "Origin failures", "Memory", "CPU", "Data directory free"} {
		if !slices.Contains(titles, want) {
			t.Errorf("no panel %q", want)
		}
	}
}

// TestEveryAlertTested: each alert of the rules has a promtool case that
// expects it to fire.
func TestEveryAlertTested(t *testing.T) {
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	var tests struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string `yaml:"alertname"`
				ExpAlerts []any  `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	readYAML(t, rulesFile, &rules)
	readYAML(t, rulesTestFile, &tests)
	fires := map[string]bool{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			}
		}
	}
	n := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			n++
			if !fires[r.Alert] {
				t.Errorf("alert %s has no promtool case in which it fires", r.Alert)
			}
		}
	}
	if n < 14 {
		t.Errorf("%d alerts: the rules lost some", n)
	}
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
