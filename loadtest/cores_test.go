// The core layout: the plan for a host's cores, and the pinning itself
// on this machine's real cores (a child started on a set runs there from
// birth; this process's threads all move).
package main

import (
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func seq(from, n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = from + i
	}
	return s
}

func TestPlanCores(t *testing.T) {
	for _, c := range []struct {
		cpus                  []int
		caches                int
		nodes, origin, client string
	}{
		{cpus: seq(0, 2), caches: 1}, // this machine: nothing pinned
		{cpus: seq(0, 7), caches: 1}, // one short
		{cpus: seq(0, 16), caches: 1, nodes: "0-3", origin: "4-7", client: "8-15"},
		{cpus: seq(0, 16), caches: 3, nodes: "0-1 2-3 4-5", origin: "6-9", client: "10-15"},
		{cpus: seq(0, 8), caches: 1, nodes: "0-1", origin: "2-3", client: "4-7"},
		{cpus: seq(0, 8), caches: 3, nodes: "0 1 2", origin: "3-4", client: "5-7"},
		{cpus: seq(0, 8), caches: 6}, // a core each leaves the client none
		{cpus: []int{0, 2, 4, 6, 8, 10, 12, 14}, caches: 1, nodes: "0,2", origin: "4,6", client: "8,10,12,14"},
	} {
		l := planCores(c.cpus, c.caches)
		var nodes []string
		for _, s := range l.nodes {
			nodes = append(nodes, s.String())
		}
		got := [3]string{strings.Join(nodes, " "), l.origin.String(), l.client.String()}
		if want := [3]string{c.nodes, c.origin, c.client}; got != want {
			t.Errorf("%d cores, %d caches: nodes %q, origin %q, client %q; want %q", len(c.cpus), c.caches, got[0], got[1], got[2], want)
		}
		if l.pinned() != (c.client != "") {
			t.Errorf("%d cores, %d caches: pinned %v", len(c.cpus), c.caches, l.pinned())
		}
		if !l.pinned() {
			continue
		}
		// Disjoint, and every core given to someone.
		var all []int
		for _, s := range append(slices.Clone(l.nodes), l.origin, l.client) {
			all = append(all, s...)
		}
		if slices.Sort(all); !slices.Equal(all, c.cpus) {
			t.Errorf("%d cores, %d caches: the sets hold %v", len(c.cpus), c.caches, all)
		}
	}
}

func TestLayoutFollowsTheOptions(t *testing.T) {
	cluster, _ := lookupScenario("cluster-scale")
	reads, _ := lookupScenario("reads")
	cpus := seq(0, 16)
	if l := layoutFor(options{pin: true}, cluster, cpus); len(l.nodes) != 3 || l.client.String() != "10-15" {
		t.Errorf("cluster-scale on 16 cores: %v", l)
	}
	if l := layoutFor(options{pin: true}, reads, cpus); len(l.nodes) != 1 || l.node(0).String() != "0-3" {
		t.Errorf("reads on 16 cores: %v", l)
	}
	if l := layoutFor(options{pin: false}, reads, cpus); l.pinned() {
		t.Errorf("-pin=false pinned: %v", l)
	}
	if l := layoutFor(options{pin: true, endpoint: endpointOptions{url: "http://host:9000"}}, reads, cpus); l.pinned() {
		t.Errorf("an -endpoint run pinned: %v", l)
	}
}

func TestLayoutInTheReport(t *testing.T) {
	l := planCores(seq(0, 16), 1)
	md := withCores("# Reads\n\nbody\n", l)
	if !strings.HasPrefix(md, "# Reads\n\nCores: pinned") || !strings.Contains(md, "0-3") || !strings.HasSuffix(md, "\nbody\n") {
		t.Fatalf("report:\n%s", md)
	}
	if s := (coreLayout{}).String(); !strings.Contains(s, "not pinned") {
		t.Fatalf("an unpinned layout says %q", s)
	}
}

// allowed is the Cpus_allowed_list of a /proc status file.
func allowed(t *testing.T, status string) string {
	t.Helper()
	b, err := os.ReadFile(status)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("%s has no Cpus_allowed_list", status)
	return ""
}

func TestStartOnPinsTheChild(t *testing.T) {
	cpus, err := onlineCPUs()
	if err != nil {
		t.Fatal(err)
	}
	last := coreSet{cpus[len(cpus)-1]}
	cmd := exec.Command("sleep", "60")
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var before unix.CPUSet
	if err := unix.SchedGetaffinity(0, &before); err != nil {
		t.Fatal(err)
	}
	if err := startCmdOn(last, cmd); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	if got := allowed(t, "/proc/"+strconv.Itoa(cmd.Process.Pid)+"/status"); got != last.String() {
		t.Errorf("the child runs on %q, want %q", got, last)
	}
	var after unix.CPUSet
	if err := unix.SchedGetaffinity(0, &after); err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Errorf("the starting thread kept the child's cores: %v, was %v", after, before)
	}
}

func TestPinSelfMovesEveryThread(t *testing.T) {
	cpus, err := onlineCPUs()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := pinSelf(cpus); err != nil {
			t.Errorf("unpin: %v", err)
		}
	})
	first := coreSet{cpus[0]}
	if err := pinSelf(first); err != nil {
		t.Fatal(err)
	}
	tids, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, tid := range tids {
		if got := allowed(t, "/proc/self/task/"+tid.Name()+"/status"); got != first.String() {
			t.Errorf("thread %s runs on %q, want %q", tid.Name(), got, first)
		}
	}
}
