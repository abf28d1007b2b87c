// Tests of the scenario registry: every scenario listed and dispatched
// from the one table, unknown names refused with the list, -endpoint
// refused by the scenarios that control processes, and every scenario
// `make bench` runs registered.
package main

import (
	"context"
	"errors"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
)

func TestRegistryListsEveryScenario(t *testing.T) {
	want := []string{"reads", "bodies", "checkpoint", "mount", "epochs", "hdfs-epochs", "cluster", "cluster-scale", "mount-cluster", "tls", "origin-faults"}
	if len(registry) != len(want) {
		t.Fatalf("%d scenarios registered, want %d", len(registry), len(want))
	}
	usage := scenarioUsage()
	for i, s := range registry {
		if s.name != want[i] || s.desc == "" || s.targets == "" || s.run == nil {
			t.Errorf("entry %d: %+v, want %s with a description, targets and a run function", i, s, want[i])
		}
		if !strings.Contains(usage, "\n  "+s.name+" ") || !strings.Contains(usage, s.desc) {
			t.Errorf("usage lacks %s: %s", s.name, usage)
		}
		if got, ok := lookupScenario(s.name); !ok || got.name != s.name {
			t.Errorf("lookup %s: %v %v", s.name, got.name, ok)
		}
	}
	if registry[0].outFile() != "latest.md" || registry[1].outFile() != "bodies.md" || registry[2].outFile() != "checkpoint.md" {
		t.Errorf("report files %s, %s, %s", registry[0].outFile(), registry[1].outFile(), registry[2].outFile())
	}
}

func TestParseScenarios(t *testing.T) {
	got, err := parseScenarios(" epochs,reads,epochs", false)
	if err != nil || len(got) != 2 || got[0].name != "epochs" || got[1].name != "reads" {
		t.Fatalf("got %v, %v; want epochs then reads", got, err)
	}
	_, err = parseScenarios("reads,bogus", false)
	if err == nil || !strings.Contains(err.Error(), `unknown scenario "bogus"`) {
		t.Fatalf("unknown scenario: %v", err)
	}
	for _, s := range registry {
		if !strings.Contains(err.Error(), s.name) {
			t.Errorf("refusal %q does not list %s", err, s.name)
		}
	}
}

// TestEndpointRefusedByProcessScenarios: a scenario that starts, kills or
// mounts processes of its own refuses -endpoint by name; reads takes it.
func TestEndpointRefusedByProcessScenarios(t *testing.T) {
	for _, s := range registry {
		_, err := parseScenarios(s.name, true)
		if s.endpoint != (err == nil) {
			t.Errorf("%s with -endpoint: %v", s.name, err)
		}
		if err != nil && !strings.Contains(err.Error(), "scenario "+s.name+" cannot measure -endpoint") {
			t.Errorf("%s: unclear refusal %q", s.name, err)
		}
	}
	for _, name := range []string{"mount", "cluster", "origin-faults"} {
		if s, _ := lookupScenario(name); s.endpoint {
			t.Errorf("%s controls processes but takes -endpoint", name)
		}
	}
	if s, _ := lookupScenario("reads"); !s.endpoint {
		t.Error("reads refuses -endpoint")
	}
}

// TestMakefileScenariosRegistered: every -scenario `make bench` passes is
// in the registry.
func TestMakefileScenariosRegistered(t *testing.T) {
	b, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`\./loadtest [^\n]*-scenario (\S+)`).FindAllStringSubmatch(string(b), -1)
	if len(m) == 0 {
		t.Fatal("no -scenario in the Makefile")
	}
	for _, sm := range m {
		if _, err := parseScenarios(sm[1], false); err != nil {
			t.Errorf("Makefile: %v", err)
		}
	}
}

// TestRunScenariosDispatchesInOrder runs stub scenarios through the
// dispatch: reports in order, a failure named by its scenario.
func TestRunScenariosDispatchesInOrder(t *testing.T) {
	stub := func(name string, err error) scenario {
		return scenario{name: name, run: func(context.Context, options, io.Writer) (reporter, error) {
			if err != nil {
				return nil, err
			}
			return stubReport(name), nil
		}}
	}
	md, err := runScenarios(context.Background(), options{scenarios: []scenario{stub("a", nil), stub("b", nil)}}, io.Discard)
	// Each report says its core layout (none here: options.pin is off).
	if want := withCores("report a\n", coreLayout{}) + "\n" + withCores("report b\n", coreLayout{}); err != nil || md != want {
		t.Fatalf("got %q, %v", md, err)
	}
	boom := errors.New("boom")
	_, err = runScenarios(context.Background(), options{scenarios: []scenario{stub("a", nil), stub("b", boom)}}, io.Discard)
	if !errors.Is(err, boom) || !strings.HasPrefix(err.Error(), "b: ") {
		t.Fatalf("failure: %v", err)
	}
}

type stubReport string

func (s stubReport) markdown() string { return "report " + string(s) + "\n" }
