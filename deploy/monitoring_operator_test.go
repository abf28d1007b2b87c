// Tests of the monitoring overlay for the Prometheus operator: its
// PrometheusRule is the rules file, word for word (regenerate with
// `go test ./deploy -run TestPrometheusRule -update`), and its
// ServiceMonitor selects the client Service, by a port it has, in every
// variant it is applied beside.
package deploy

import (
	"flag"
	"os"
	"reflect"
	"strings"
	"testing"

	monv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite generated deploy files (the PrometheusRule) from their sources")

const prometheusRuleFile = "kubernetes/overlays/monitoring/prometheusrule.yaml"

// prometheusRule wraps the rules file's groups in a PrometheusRule: the
// file's comment heads it, its groups become spec.groups.
func prometheusRule(rules string) string {
	var head, body strings.Builder
	for _, line := range strings.SplitAfter(rules, "\n") {
		switch {
		case body.Len() == 0 && strings.HasPrefix(line, "#"):
			head.WriteString(line)
		case line == "\n" || line == "":
			body.WriteString(line)
		default:
			body.WriteString("  " + line)
		}
	}
	return "# Generated from deploy/monitoring/granary-rules.yaml by\n" +
		"# `go test ./deploy -run TestPrometheusRule -update`: edit that file.\n" +
		head.String() +
		"apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata:\n  name: granary\nspec:\n" +
		body.String()
}

func TestPrometheusRuleGenerated(t *testing.T) {
	rules, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	want := prometheusRule(string(rules))
	if *update {
		if err := os.WriteFile(prometheusRuleFile, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(prometheusRuleFile)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("%s differs from %s: run go test ./deploy -run TestPrometheusRule -update", prometheusRuleFile, rulesFile)
	}
}

// TestMonitoringOverlay renders the overlay beside the StatefulSet and
// the DaemonSet variants.
func TestMonitoringOverlay(t *testing.T) {
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var fromFile struct {
		Groups []monv1.RuleGroup `json:"groups"`
	}
	if err := yaml.UnmarshalStrict(b, &fromFile); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	for _, variant := range []string{"base", "overlays/node-local"} {
		t.Run(variant, func(t *testing.T) {
			o := render(t, variant, "overlays/monitoring")
			var sms []*monv1.ServiceMonitor
			var prs []*monv1.PrometheusRule
			for _, obj := range o.all {
				switch v := obj.(type) {
				case *monv1.ServiceMonitor:
					sms = append(sms, v)
				case *monv1.PrometheusRule:
					prs = append(prs, v)
				}
			}
			if len(sms) != 1 || len(prs) != 1 {
				t.Fatalf("%d ServiceMonitors, %d PrometheusRules; want one each", len(sms), len(prs))
			}
			checkServiceMonitor(t, o, sms[0])
			if got := ruleSummary(prs[0].Spec.Groups); !reflect.DeepEqual(got, ruleSummary(fromFile.Groups)) {
				t.Errorf("PrometheusRule rules %v, want the rules file's %v", got, ruleSummary(fromFile.Groups))
			}
		})
	}
}

// checkServiceMonitor: sm selects exactly the client Service, in its
// namespace, by a port of that Service, at /metrics.
func checkServiceMonitor(t *testing.T, o *objects, sm *monv1.ServiceMonitor) {
	t.Helper()
	var selected []string
	for name, svc := range o.services {
		if selects(sm.Spec.Selector.MatchLabels, svc.Labels) {
			selected = append(selected, name)
		}
	}
	if len(selected) != 1 || selected[0] != "granary" {
		t.Fatalf("ServiceMonitor selects Services %v, want [granary] (a second one doubles every series)", selected)
	}
	if ns := sm.Spec.NamespaceSelector.MatchNames; len(ns) != 1 || ns[0] != o.services["granary"].Namespace {
		t.Errorf("ServiceMonitor looks in namespaces %v", ns)
	}
	for _, ep := range sm.Spec.Endpoints {
		found := false
		for _, p := range o.services["granary"].Spec.Ports {
			found = found || p.Name == ep.Port
		}
		if !found || ep.Path != "/metrics" {
			t.Errorf("endpoint port %q path %q: want a port of Service granary and /metrics", ep.Port, ep.Path)
		}
	}
	if len(sm.Spec.Endpoints) == 0 {
		t.Error("ServiceMonitor has no endpoint")
	}
}

// ruleSummary names each rule (alert or record) with its expression.
func ruleSummary(groups []monv1.RuleGroup) []string {
	var s []string
	for _, g := range groups {
		for _, r := range g.Rules {
			s = append(s, g.Name+"/"+r.Alert+r.Record+": "+r.Expr.String())
		}
	}
	return s
}
