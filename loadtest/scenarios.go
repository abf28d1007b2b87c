// The scenario registry: every scenario the load test knows, in one
// table that the -scenario flag's parsing, its usage text and the
// dispatch all read. A new scenario is one entry here.
package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"
)

// reporter is a scenario's result: a markdown report.
type reporter interface{ markdown() string }

// scenario is one entry of the registry.
type scenario struct {
	name string
	desc string // one line, for the usage text
	// targets says what the scenario measures and starts: the usage
	// text's account of what it needs on this machine.
	targets string
	// endpoint tells whether the scenario can measure an -endpoint
	// instead of the servers it starts; those that start, kill or mount
	// processes of their own cannot.
	endpoint bool
	// out is the report's file under loadtest/results when the scenario
	// runs alone (latest.md for several); "" is the name plus ".md".
	out string
	// caches is how many caches run at once (a cluster's nodes), each
	// on cores of its own when the run pins (cores.go); 0 means 1.
	caches int
	run    func(ctx context.Context, o options, logw io.Writer) (reporter, error)
}

// as adapts a scenario's run function, which returns its own report
// type, to the registry's.
func as[R reporter](f func(context.Context, options, io.Writer) (R, error)) func(context.Context, options, io.Writer) (reporter, error) {
	return func(ctx context.Context, o options, logw io.Writer) (reporter, error) {
		rep, err := f(ctx, o, logw)
		if err != nil {
			return nil, err
		}
		return rep, nil
	}
}

// registry lists the scenarios in the usage text's order.
var registry = []scenario{
	{name: "reads", desc: "GETs of small and large objects", endpoint: true, out: "latest.md", run: as(run),
		targets: "MinIO, the trivial server, nginx; granary with -granary; or the -endpoint alone"},
	{name: "bodies", desc: "the reads scenario over objects of 256KiB and 1MiB, which a node sends with sendfile", endpoint: true, run: as(runBodies),
		targets: "MinIO, the trivial server, nginx; granary with -granary; or the -endpoint alone"},
	{name: "checkpoint", desc: "save and restore through a slow origin", run: as(runCheckpoint),
		targets: "MinIO behind the slow proxy, nginx; granary with -granary"},
	{name: "mount", desc: "files through granary mount against local disk", run: as(runMount),
		targets: "granary serve and granary mount (-granary; root, /dev/fuse)"},
	{name: "epochs", desc: "a data set of small files read for several epochs through a slow origin", run: as(runEpochs),
		targets: "MinIO behind the slow proxy, nginx; granary with -granary"},
	{name: "hdfs-epochs", desc: "the same from the test HDFS cluster behind slow proxies, direct with the HDFS client and through granary", run: as(runHDFSEpochs),
		targets: "hdfsd behind slow proxies; granary with -granary"},
	{name: "cluster", desc: "three granary nodes as a cluster through a slow origin: the peer hop's cost, and origin requests against three independent nodes", run: as(runCluster), caches: 3,
		targets: "MinIO behind the slow proxy, three granary nodes (-granary)"},
	{name: "cluster-scale", desc: "the cluster scenario's scaling part alone: a set that fits three nodes and not one, read through every node at once, against one node alone", run: as(runClusterScale), caches: 3,
		targets: "MinIO behind the slow proxy, three granary nodes and one alone (-granary)"},
	{name: "mount-cluster", desc: "warm files through granary mount in front of one node and of three, the mount reading from the owners or through one node", run: as(runMountCluster), caches: 3,
		targets: "MinIO, one granary node, three as a cluster, granary mount (-granary; root, /dev/fuse)"},
	{name: "tls", desc: "a node serving HTTPS against one serving HTTP: warm GETs of 4KiB and 100KiB objects at 64 clients, one 1GiB stream", run: as(runTLS),
		targets: "MinIO; granary nodes, nginx and the trivial server, each over HTTP and HTTPS (-granary)"},
	{name: "origin-faults", desc: "a warmed set read while the origin is healthy, hung, refusing and back", run: as(runOriginFaults),
		targets: "MinIO behind a fault proxy, one granary node (-granary)"},
}

// outFile is the report's file name when s runs alone.
func (s scenario) outFile() string {
	if s.out != "" {
		return s.out
	}
	return s.name + ".md"
}

// lookupScenario returns the registry's entry for name.
func lookupScenario(name string) (scenario, bool) {
	i := slices.IndexFunc(registry, func(s scenario) bool { return s.name == name })
	if i < 0 {
		return scenario{}, false
	}
	return registry[i], true
}

// scenarioNames lists the registry's names, "a, b or c".
func scenarioNames() string {
	names := make([]string, len(registry))
	for i, s := range registry {
		names[i] = s.name
	}
	last := len(names) - 1
	return strings.Join(names[:last], ", ") + " or " + names[last]
}

// outUsage is the -out flag's usage text, naming each scenario's file.
func outUsage() string {
	var files []string
	for _, s := range registry {
		if s.outFile() != "latest.md" {
			files = append(files, s.outFile())
		}
	}
	last := len(files) - 1
	return "markdown report file (default loadtest/results/latest.md, or " + strings.Join(files[:last], ", ") + " or " + files[last] +
		" when that scenario runs alone; none with -quick or -endpoint)"
}

// scenarioUsage is the -scenario flag's usage text: every scenario with
// its description and what it measures.
func scenarioUsage() string {
	var b strings.Builder
	b.WriteString("comma-separated scenarios to run in order:")
	for _, s := range registry {
		fmt.Fprintf(&b, "\n  %-14s %s\n  %-14s   measures: %s", s.name, s.desc, "", s.targets)
		if s.endpoint {
			b.WriteString("; takes -endpoint")
		}
	}
	return b.String()
}

// parseScenarios splits and checks the -scenario list; with an endpoint,
// every scenario named must take one.
func parseScenarios(s string, endpoint bool) ([]scenario, error) {
	var out []scenario
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		sc, ok := lookupScenario(name)
		if !ok {
			return nil, fmt.Errorf("unknown scenario %q: want %s", name, scenarioNames())
		}
		if endpoint && !sc.endpoint {
			return nil, fmt.Errorf("scenario %s cannot measure -endpoint: it starts and controls processes of its own (%s)", name, sc.targets)
		}
		if !slices.ContainsFunc(out, func(o scenario) bool { return o.name == name }) {
			out = append(out, sc)
		}
	}
	return out, nil
}

// runScenarios runs o.scenarios in order and returns their reports, one
// after the other.
func runScenarios(ctx context.Context, o options, logw io.Writer) (string, error) {
	var md strings.Builder
	for _, s := range o.scenarios {
		if md.Len() > 0 {
			md.WriteString("\n")
		}
		if err := layOut(o, s); err != nil {
			return "", fmt.Errorf("%s: %w", s.name, err)
		}
		fmt.Fprintf(logw, "%s: %s\n", s.name, pins)
		rep, err := s.run(ctx, o, logw)
		if err != nil {
			return "", fmt.Errorf("%s: %w", s.name, err)
		}
		md.WriteString(withCores(rep.markdown(), pins))
	}
	return md.String(), nil
}

// pins is the core layout of the scenario running (cores.go); the zero
// layout, unless -pin allows and the machine has the cores.
var pins coreLayout

// layOut sets pins for s and moves this process onto its client cores,
// with as many Ps as it has cores there (the runtime counts them at
// start); a scenario that pins nothing after one that did gets them all
// back.
func layOut(o options, s scenario) error {
	cpus, err := machineCPUs()
	if err != nil {
		return err
	}
	was := pins.pinned()
	pins = layoutFor(o, s, cpus)
	switch {
	case pins.pinned():
		runtime.GOMAXPROCS(len(pins.client))
		return pinSelf(pins.client)
	case was:
		err := pinSelf(cpus)
		runtime.SetDefaultGOMAXPROCS()
		return err
	}
	return nil
}

// layoutFor is s's layout of cpus under o: none without -pin, or for an
// -endpoint (measured from here whole: nothing else runs here).
func layoutFor(o options, s scenario, cpus []int) coreLayout {
	if !o.pin || o.endpoint.url != "" {
		return coreLayout{}
	}
	return planCores(cpus, max(s.caches, 1))
}

// machineCPUs is the CPUs this process could run on when it started,
// before any layout moved it.
var machineCPUs = sync.OnceValues(onlineCPUs)

// withCores puts the layout's line under a report's title.
func withCores(md string, l coreLayout) string {
	title, rest, ok := strings.Cut(md, "\n")
	if !ok {
		return md + "\n\n" + l.String() + "\n"
	}
	return title + "\n\n" + l.String() + "\n" + rest
}
