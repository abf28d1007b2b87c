// Core layout: on a host with enough cores, each part of a scenario (the
// cache under test or each cluster node, the origin, and this process,
// which is the client) runs on cores of its own, as taskset would pin
// them, so a throughput is the part's and not the machine's sharing. On
// fewer cores nothing is pinned and the reports lean on CPU per request.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// minPinCores is the fewest cores a run pins on: below it a part would
// get a single core or none.
const minPinCores = 8

// coreSet is a set of CPU numbers, ascending.
type coreSet []int

// String is the set as taskset's list: "0-3,8".
func (s coreSet) String() string {
	var parts []string
	for i := 0; i < len(s); {
		j := i
		for j+1 < len(s) && s[j+1] == s[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(s[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", s[i], s[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// coreLayout is where a scenario's parts run. The zero layout pins
// nothing. Invariant: the sets of a layout are disjoint.
type coreLayout struct {
	nodes  []coreSet // the cache under test (one) or a cluster's nodes; nginx runs on the first
	origin coreSet   // MinIO or the HDFS daemon
	client coreSet   // this process: the load, the slow link's proxy, the trivial server
}

// pinned says whether l pins anything.
func (l coreLayout) pinned() bool { return len(l.client) > 0 }

// node is the set of cache or node i (0 for a lone cache), nil when
// nothing is pinned.
func (l coreLayout) node(i int) coreSet {
	if len(l.nodes) == 0 {
		return nil
	}
	return l.nodes[i%len(l.nodes)]
}

// planCores lays out cpus for a scenario of n caches (1, or a cluster's
// nodes): one cache gets a quarter of the cores, a cluster three eighths
// shared evenly (at least one core each), the origin a quarter, the
// client the rest; on 16 cores, a cache 0-3, the origin 4-7, the client
// 8-15, or nodes 0-1, 2-3, 4-5, the origin 6-9, the client 10-15. With
// fewer than minPinCores it returns the zero layout.
func planCores(cpus []int, n int) coreLayout {
	total := len(cpus)
	if total < minPinCores || n < 1 {
		return coreLayout{}
	}
	caches := total / 4
	if n > 1 {
		caches = 3 * total / 8
	}
	per := max(1, caches/n)
	if n*per+total/4 >= total {
		return coreLayout{} // no core would be left for the client
	}
	var l coreLayout
	next := 0
	take := func(k int) coreSet {
		s := coreSet(slices.Clone(cpus[next : next+k]))
		next += k
		return s
	}
	for range n {
		l.nodes = append(l.nodes, take(per))
	}
	l.origin = take(total / 4)
	l.client = take(total - next)
	return l
}

// String describes l for a report.
func (l coreLayout) String() string {
	if !l.pinned() {
		return fmt.Sprintf("Cores: not pinned; the scenario's processes share this machine's %d cores (pinning needs %d or more).",
			runtime.NumCPU(), minPinCores)
	}
	names := make([]string, len(l.nodes))
	for i, s := range l.nodes {
		names[i] = s.String()
	}
	what := "the cache under test (Granary or nginx, whose workers are as many as its cores)"
	if len(l.nodes) > 1 {
		what = "each Granary node, in turn"
	}
	return fmt.Sprintf("Cores: pinned (sched_setaffinity, as taskset): %s on %s; the origin on %s; the client (the load, the slow link's proxy, the trivial server) on %s.",
		what, strings.Join(names, " / "), l.origin, l.client)
}

// onlineCPUs returns the CPUs this process may run on.
func onlineCPUs() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, err
	}
	var cpus []int
	for c := 0; c < len(set)*64; c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// cpuSet is s as the kernel's mask.
func (s coreSet) cpuSet() *unix.CPUSet {
	var set unix.CPUSet
	for _, c := range s {
		set.Set(c)
	}
	return &set
}

// pinSelf moves every thread of this process onto s; the runtime's later
// threads inherit it from the threads that start them. It repeats until
// a walk finds no thread it has not moved.
func pinSelf(s coreSet) error {
	done := map[int]bool{}
	for {
		tids, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return err
		}
		moved := false
		for _, t := range tids {
			tid, err := strconv.Atoi(t.Name())
			if err != nil || done[tid] {
				continue
			}
			// A thread that exited meanwhile fails with ESRCH: nothing to pin.
			if err := unix.SchedSetaffinity(tid, s.cpuSet()); err != nil && err != unix.ESRCH {
				return fmt.Errorf("pin thread %d to %s: %w", tid, s, err)
			}
			done[tid], moved = true, true
		}
		if !moved {
			return nil
		}
	}
}

// startOn runs start (which starts processes) with the calling thread
// on s, so the processes it forks inherit s from birth, threads and
// children alike; nil s runs it as it is. The thread is locked for the
// call, so no other goroutine runs on it with s, and the runtime starts
// no thread from a locked one.
func startOn(s coreSet, start func() error) error {
	if len(s) == 0 {
		return start()
	}
	runtime.LockOSThread()
	var was unix.CPUSet
	if err := unix.SchedGetaffinity(0, &was); err != nil {
		runtime.UnlockOSThread()
		return err
	}
	if err := unix.SchedSetaffinity(0, s.cpuSet()); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("pin to %s: %w", s, err)
	}
	err := start()
	if rerr := unix.SchedSetaffinity(0, &was); rerr != nil {
		// The thread keeps s: leave it locked, so it ends with its
		// goroutine instead of running others there.
		return fmt.Errorf("unpin from %s: %w", s, rerr)
	}
	runtime.UnlockOSThread()
	return err
}

// startCmdOn starts cmd on s (see startOn).
func startCmdOn(s coreSet, cmd *exec.Cmd) error {
	return startOn(s, cmd.Start)
}
