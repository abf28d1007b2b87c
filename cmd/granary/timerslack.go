// The timer slack every thread of granary runs with. Go's sysmon thread
// naps 20 µs at a time whenever the process is not wholly idle, and each
// nap ends in a context switch: a node between bursts of requests (any
// node not saturated, a cluster member answering its peers) wakes it
// thousands of times a second. A slack of 200 µs lets the kernel end
// those naps later and together with other wake-ups, as it may for any
// timer; nothing in granary waits on a timer that fine.
//
// A thread takes its slack from the thread that made it, and sysmon and
// a few others exist before any of granary's code runs, so the slack is
// written to every thread the process has (/proc/self/task lists
// them; each thread's slack is /proc/TID/timerslack_ns), until a
// walk finds no thread it has not seen. Setting another thread's slack
// needs CAP_SYS_NICE; without it only the threads made from this one
// after start get it, and serve says so.
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

// timerSlackEnv sets the slack (a Go duration); "0" keeps the slack
// granary was started with.
const timerSlackEnv = "GRANARY_TIMER_SLACK"

// defaultTimerSlack is the slack when timerSlackEnv is unset;
// maxTimerSlack bounds the setting (timers past it would be late enough
// for a client to notice).
const (
	defaultTimerSlack = 200 * time.Microsecond
	maxTimerSlack     = 10 * time.Millisecond
)

// maxSlackWalks bounds the walks of the process's threads: each walk
// after the first only meets threads made during the one before.
const maxSlackWalks = 8

// slackResult is what adoptTimerSlack did: the slack asked for and how
// many threads took it or kept their own (refused: no CAP_SYS_NICE).
type slackResult struct {
	want      time.Duration
	set, kept int
}

// timerSlackAdopted is what main's adoptTimerSlack did, for serve to
// report; written once, before any command runs.
var timerSlackAdopted slackResult

// timerSlack is the slack getenv asks for.
func timerSlack(getenv Getenv) (time.Duration, error) {
	v, ok := getenv(timerSlackEnv)
	if !ok || v == "" {
		return defaultTimerSlack, nil
	}
	d, err := time.ParseDuration(v)
	if err == nil && (d < 0 || d > maxTimerSlack) {
		err = fmt.Errorf("not within 0 and %v", maxTimerSlack)
	}
	if err != nil {
		return 0, fmt.Errorf("%s=%q: want a duration such as 200us, or 0: %v", timerSlackEnv, v, err)
	}
	return d, nil
}

// startWithTimerSlack is main's first step: every thread takes the slack
// the environment asks for; a bad setting exits with a usage error.
func startWithTimerSlack() {
	r, err := adoptTimerSlack(os.LookupEnv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "granary: %v\n", err)
		os.Exit(exitUsage)
	}
	timerSlackAdopted = r
}

// adoptTimerSlack gives every thread of the process the slack getenv
// asks for. It fails only for a bad setting; a thread that refuses keeps
// its slack, counted in the result.
func adoptTimerSlack(getenv Getenv) (slackResult, error) {
	want, err := timerSlack(getenv)
	if err != nil || want == 0 {
		return slackResult{}, err
	}
	r := slackResult{want: want}
	value := []byte(strconv.FormatInt(int64(want), 10))
	seen := map[string]bool{}
	for walk := 0; walk < maxSlackWalks; walk++ {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return r, nil // no /proc: every thread keeps its slack
		}
		fresh := false
		for _, task := range tasks {
			if seen[task.Name()] {
				continue
			}
			seen[task.Name()], fresh = true, true
			// The file is under /proc/TID, not /proc/self/task/TID.
			if setSlack("/proc/"+task.Name()+"/timerslack_ns", value) {
				r.set++
			} else {
				r.kept++
			}
		}
		if !fresh {
			break
		}
	}
	return r, nil
}

// setSlack writes value to a thread's timerslack_ns file; false if the
// thread refused it or is gone.
func setSlack(path string, value []byte) bool {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return false
	}
	_, err = f.Write(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err == nil
}
