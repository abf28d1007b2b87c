// The timer slack every thread of granary runs with. Go's sysmon thread
// naps 20 µs at a time whenever the process is not wholly idle, and each
// nap ends in a context switch: a node between bursts of requests (any
// node not saturated, a cluster member answering its peers) wakes it
// thousands of times a second. A slack of 2 ms lets the kernel end
// those naps later and together with other wake-ups, as it may for any
// timer. What granary itself times finer than that is background work
// (the index's 1 ms linger for a crowded batch of the disk filler's
// inserts, the paced fill's 5 ms naps), which may run up to 2 ms later:
// batches grow, the fill paces slower. An event a thread waits for (a
// socket ready, a lock released) wakes it when it happens; only
// timeouts are slack.
//
// A thread takes its slack from the thread that made it, and sysmon and
// a few others exist before any of granary's code runs, so the slack is
// written to every thread the process has (/proc/self/task lists
// them; each thread's slack is /proc/TID/timerslack_ns), until a
// walk finds no thread it has not seen. Setting another thread's slack
// needs CAP_SYS_NICE. Without it (a container that drops every
// capability), the process sets its own thread's slack and executes
// itself again in its own place (same process ID, arguments,
// environment and descriptors), once: the new image's threads are all
// made from that thread. If that fails, it runs on, and serve says how
// many threads kept their slack.
package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// timerSlackEnv sets the slack (a Go duration); "0" keeps the slack
// granary was started with.
const timerSlackEnv = "GRANARY_TIMER_SLACK"

// defaultTimerSlack is the slack when timerSlackEnv is unset;
// maxTimerSlack bounds the setting (timers past it would be late enough
// for a client to notice).
const (
	defaultTimerSlack = 2 * time.Millisecond
	maxTimerSlack     = 10 * time.Millisecond
)

// timerSlackExecuted marks a process executed again for its slack, so
// that it is never executed a third time, whatever the kernel kept.
const timerSlackExecuted = "GRANARY_TIMER_SLACK_SET"

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
// asks for, executing the process again if it may not set them all
// (not returning then). It fails only for a bad setting; a thread that
// keeps its slack is counted in the result.
func adoptTimerSlack(getenv Getenv) (slackResult, error) {
	want, err := timerSlack(getenv)
	if err != nil || want == 0 {
		return slackResult{}, err
	}
	r := setThreadSlacks(want)
	if _, again := getenv(timerSlackExecuted); again {
		os.Unsetenv(timerSlackExecuted) // not for the processes this one starts
		return r, nil
	}
	if r.kept > 0 {
		execWithSlack(want)
	}
	return r, nil
}

// execWithSlack sets this thread's slack and executes the program again
// from it, so that every thread of the new image inherits the slack. It
// returns only if that failed, with the thread's slack as it was.
func execWithSlack(want time.Duration) {
	runtime.LockOSThread() // the slack is this thread's, and exec keeps it
	defer runtime.UnlockOSThread()
	cur, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil || unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(want), 0, 0, 0) != nil {
		return
	}
	env := append(os.Environ(), timerSlackExecuted+"=1")
	_ = unix.Exec("/proc/self/exe", os.Args, env) // returns only if it failed
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(cur), 0, 0, 0)
}

// setThreadSlacks gives every thread the slack want where it may.
func setThreadSlacks(want time.Duration) slackResult {
	r := slackResult{want: want}
	value := []byte(strconv.FormatInt(int64(want), 10))
	seen := map[string]bool{}
	for walk := 0; walk < maxSlackWalks; walk++ {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return r // no /proc: every thread keeps its slack
		}
		fresh := false
		for _, task := range tasks {
			if seen[task.Name()] {
				continue
			}
			seen[task.Name()], fresh = true, true
			// The file is under /proc/TID, not /proc/self/task/TID.
			switch setSlack("/proc/"+task.Name()+"/timerslack_ns", value) {
			case slackSet:
				r.set++
			case slackRefused:
				r.kept++
			}
		}
		if !fresh {
			break
		}
	}
	return r
}

// What setSlack did for a thread.
const (
	slackSet = iota
	slackRefused
	slackGone // the thread exited meanwhile
)

// setSlack gives a thread the slack value unless it has it, writing
// value to the thread's timerslack_ns file at path.
func setSlack(path string, value []byte) int {
	if b, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(b)) == string(value) {
		return slackSet
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err == nil {
		_, err = f.Write(value)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	switch {
	case err == nil:
		return slackSet
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, unix.ESRCH):
		return slackGone
	}
	return slackRefused
}
