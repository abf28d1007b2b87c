// CPU time spent by the load test's processes: the nodes (from
// /proc/PID/stat) and the load test itself (getrusage), so a row can say
// what each read cost the machine's shared cores, not only how long it
// took; and the nodes' page faults and context switches, counts that do
// not depend on the machine's speed.
package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTick is the unit of /proc/PID/stat's utime and stime: USER_HZ,
// 100 on every Linux architecture Go supports.
const clockTick = 10 * time.Millisecond

// procStat returns the sum of fields (numbered as in proc(5)) of
// /proc/PID/stat, each a count.
func procStat(pid int, fields ...int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces: fields are counted
	// after its closing parenthesis, from field 3 (state) on.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	var sum int64
	for _, field := range fields {
		if field-3 >= len(f) {
			return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
		}
		n, err := strconv.ParseInt(f[field-3], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		sum += n
	}
	return sum, nil
}

// procCPU returns the user plus system CPU time process pid has used.
func procCPU(pid int) (time.Duration, error) {
	ticks, err := procStat(pid, 14, 15) // utime, stime
	return time.Duration(ticks) * clockTick, err
}

// procRunTime returns the time every live thread of process pid has
// run, to the nanosecond (the first field of /proc/PID/task/*/schedstat):
// for a process whose threads never exit, such as an nginx worker, its
// CPU time without procCPU's 10 ms ticks. Threads that have exited are
// not counted.
func procRunTime(pid int) (time.Duration, error) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0, err
	}
	var sum time.Duration
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, task.Name()))
		if err != nil {
			continue // the thread exited meanwhile
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			return 0, fmt.Errorf("/proc/%d/task/%s/schedstat: empty", pid, task.Name())
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/task/%s/schedstat: %w", pid, task.Name(), err)
		}
		sum += time.Duration(ns)
	}
	return sum, nil
}

// procFaults returns the minor page faults process pid has taken: pages
// it touched for the first time since the kernel gave them (or took them
// back), each zeroed, a cost that does not depend on the machine's load.
func procFaults(pid int) (int64, error) { return procStat(pid, 10) }

// procSwitches returns the context switches of every thread of process
// pid, voluntary (a thread put to sleep) and not (preempted), from
// /proc/PID/task/*/status: a cost the machine's scheduler sets (dear in
// a VM) and its speed does not. Threads that have exited are not counted.
func procSwitches(pid int) (int64, error) {
	var sum int64
	err := eachTaskStatus(pid, func(task, status string) error {
		for _, name := range []string{"voluntary_ctxt_switches", "nonvoluntary_ctxt_switches"} {
			v, ok := statusField(status, name)
			if !ok {
				continue
			}
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return fmt.Errorf("/proc/%d/task/%s/status: %w", pid, task, err)
			}
			sum += n
		}
		return nil
	})
	return sum, err
}

// eachTaskStatus calls f with each thread of process pid and the text of
// its /proc/PID/task/TID/status, skipping threads that exit meanwhile,
// until f fails.
func eachTaskStatus(pid int, f func(task, status string) error) error {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return err
	}
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", pid, task.Name()))
		if err != nil {
			continue // the thread exited meanwhile
		}
		if err := f(task.Name(), string(b)); err != nil {
			return err
		}
	}
	return nil
}

// statusField is the value of the "name:" line of a status file, trimmed.
func statusField(status, name string) (string, bool) {
	for line := range strings.Lines(status) {
		if k, v, ok := strings.Cut(line, ":"); ok && k == name {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

// selfCPU returns the user plus system CPU time the load test (its
// clients, and its proxies when they carry traffic) has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuTime returns the CPU time the node's process has used.
func (g *granaryProc) cpuTime() (time.Duration, error) { return procCPU(g.cmd.Process.Pid) }

// runTime returns the time the node's threads have run, to the
// nanosecond (procRunTime: a Go process keeps its threads).
func (g *granaryProc) runTime() (time.Duration, error) { return procRunTime(g.cmd.Process.Pid) }

// faults returns the minor page faults the node's process has taken.
func (g *granaryProc) faults() (int64, error) { return procFaults(g.cmd.Process.Pid) }
