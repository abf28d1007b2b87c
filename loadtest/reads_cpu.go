// CPU per GET in the reads scenario: what each small-object pass cost the
// target's own processes, the origin behind a cache and the client, so a
// ratio between two targets sharing these two cores comes with its cause.
package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// procSet lists the processes whose CPU time a row charges to one party:
// a node, nginx's workers, MinIO. Nil charges nothing (the trivial server
// runs in the load test, whose CPU is the client's).
type procSet func() []int

// pidOf is the procSet of one process.
func pidOf(pid int) procSet { return func() []int { return []int{pid} } }

// cpuOf sums the CPU time of ps's processes (zero for a nil set).
func cpuOf(ps procSet) (time.Duration, error) { return sumOver(ps, procCPU) }

// switchesOf sums the context switches of ps's processes (see
// procSwitches; zero for a nil set).
func switchesOf(ps procSet) (int64, error) { return sumOver(ps, procSwitches) }

// sumOver sums count over ps's processes (zero for a nil set).
func sumOver[T time.Duration | int64](ps procSet, count func(pid int) (T, error)) (T, error) {
	var sum T
	if ps == nil {
		return sum, nil
	}
	for _, pid := range ps() {
		n, err := count(pid)
		if err != nil {
			return 0, err
		}
		sum += n
	}
	return sum, nil
}

// childrenOf is the procSet of pid's children (nginx's workers and cache
// manager; the master only waits on them).
func childrenOf(pid int) procSet {
	return func() []int {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
		if err != nil {
			return nil
		}
		var pids []int
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				pids = append(pids, n)
			}
		}
		return pids
	}
}

// cpuUse is the CPU time a pass cost each party. serverMeasured and
// originOf are false when the target has no processes of its own here
// (the trivial server, an -endpoint) or no origin behind it (MinIO
// itself); unmeasured then says why (the target's cpuNote). remote is
// set for a target elsewhere, whose origin is not measured either.
type cpuUse struct {
	server, origin, client time.Duration
	// switches are the context switches of the target's processes
	// (when serverMeasured).
	switches                 float64
	serverMeasured, originOf bool
	unmeasured               string
	remote                   bool
}

// cpuMeter takes the snapshot a pass's cpuUse is measured from.
type cpuMeter struct {
	t                      target
	server, origin, client time.Duration
	switches               int64
}

func startCPU(t target) (cpuMeter, error) {
	m := cpuMeter{t: t, client: selfCPU()}
	var err error
	if m.server, err = cpuOf(t.procs); err != nil {
		return m, err
	}
	if m.switches, err = switchesOf(t.procs); err != nil {
		return m, err
	}
	m.origin, err = cpuOf(t.origin)
	return m, err
}

// used is the CPU time spent since startCPU.
func (m cpuMeter) used() (cpuUse, error) {
	client := selfCPU()
	server, err := cpuOf(m.t.procs)
	if err != nil {
		return cpuUse{}, err
	}
	origin, err := cpuOf(m.t.origin)
	if err != nil {
		return cpuUse{}, err
	}
	switches, err := switchesOf(m.t.procs)
	if err != nil {
		return cpuUse{}, err
	}
	unmeasured := m.t.cpuNote
	if unmeasured == "" {
		unmeasured = "not measured"
	}
	return cpuUse{server: server - m.server, origin: origin - m.origin, client: client - m.client,
		switches:       float64(switches - m.switches),
		serverMeasured: m.t.procs != nil, originOf: m.t.origin != nil, unmeasured: unmeasured, remote: m.t.remote}, nil
}

// perGet is u spread over n GETs.
func (u cpuUse) perGet(n int) cpuUse {
	if n <= 0 {
		return cpuUse{}
	}
	d := time.Duration(n)
	u.server, u.origin, u.client = u.server/d, u.origin/d, u.client/d
	u.switches /= float64(n)
	return u
}

func (u cpuUse) total() time.Duration { return u.server + u.origin + u.client }

// cpuTable renders the CPU per GET of every small-object pass.
func (r *report) cpuTable(b *strings.Builder) {
	b.WriteString("## CPU per GET\n\n" +
		"What each small-object pass cost the machine's two cores, per GET, from the processes' CPU time (/proc/PID/stat, " +
		"10 ms ticks; the client from getrusage): the target's own processes (a granary node; nginx's workers; MinIO), " +
		"the origin behind a cache (MinIO), and the client, which checks every body (and, for the trivial target, " +
		"also serves it). A cache's cold pass also carries what the cache did after it until its processes were idle " +
		"(writing what it brought to its disk tier), so the warm pass does not. " +
		"The target's switches are its processes' context switches per GET, voluntary and not " +
		"(/proc/PID/task/*/status): what its threads' sleeping and waking cost depends on the machine, their number does not. " +
		"Client, servers and origin share the cores, so a pass's throughput follows its total.\n\n")
	b.WriteString("| objects | conc | target | target's processes | target's switches | origin | client | total |\n" +
		"|---|---:|---|---:|---:|---:|---:|---:|\n")
	for _, s := range r.small {
		c := s.cpu.perGet(s.n)
		server, switches, origin := c.unmeasured, "-", "none"
		if c.serverMeasured {
			server, switches = us(c.server), fmt.Sprintf("%.2f", c.switches)
		}
		if c.originOf {
			origin = us(c.origin)
		}
		if c.remote {
			origin = "not measured"
		}
		fmt.Fprintf(b, "| %s | %d | %s | %s | %s | %s | %s | %s |\n", s.set, s.conc, s.target, server, switches, origin, us(c.client), us(c.total()))
	}
	b.WriteString("\n")
}
