// The timer slack every thread of granary runs with. Go's sysmon thread
// naps 20 µs at a time whenever the process is not wholly idle, and each
// nap ends in a context switch: a node between bursts of requests (any
// node not saturated, a cluster member answering its peers) wakes it
// thousands of times a second. A slack of 200 µs lets the kernel end
// those naps later and together with other wake-ups, as it may for any
// timer; nothing in granary waits on a timer that fine. A thread takes
// its slack from the thread that made it, and sysmon is made before any
// of granary's code runs, so the slack is set and the program executed
// again in its own place (same process ID, arguments, environment and
// descriptors), once, at start.
package main

import (
	"fmt"
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// timerSlackEnv sets the slack (a Go duration); "0" keeps the slack
// granary was started with and executes nothing again.
const timerSlackEnv = "GRANARY_TIMER_SLACK"

// defaultTimerSlack is the slack when timerSlackEnv is unset.
const defaultTimerSlack = 200 * time.Microsecond

// timerSlackDone marks the process executed again with its slack, so
// that it is never executed a third time, whatever the kernel kept.
const timerSlackDone = "GRANARY_TIMER_SLACK_SET"

// timerSlack is the slack getenv asks for.
func timerSlack(getenv Getenv) (time.Duration, error) {
	v, ok := getenv(timerSlackEnv)
	if !ok || v == "" {
		return defaultTimerSlack, nil
	}
	d, err := time.ParseDuration(v)
	if err == nil && d < 0 {
		err = fmt.Errorf("negative")
	}
	if err != nil {
		return 0, fmt.Errorf("%s=%q: want a duration such as 200us, or 0: %v", timerSlackEnv, v, err)
	}
	return d, nil
}

// adoptTimerSlack gives the process the slack getenv asks for: if this
// thread's is smaller, it sets it and executes the program again (not
// returning), so that every thread of the new image inherits it. It
// returns an error only for a bad setting; a process that cannot set its
// slack or execute itself again runs on with the slack it has.
func adoptTimerSlack(getenv Getenv) error {
	want, err := timerSlack(getenv)
	if err != nil {
		return err
	}
	if _, again := getenv(timerSlackDone); again {
		os.Unsetenv(timerSlackDone) // not for the processes this one starts
		return nil
	}
	if want == 0 {
		return nil
	}
	runtime.LockOSThread() // the slack is this thread's, and exec keeps it
	defer runtime.UnlockOSThread()
	cur, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil || time.Duration(cur) >= want {
		return nil
	}
	if err := unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(want), 0, 0, 0); err != nil {
		return nil
	}
	env := append(os.Environ(), timerSlackDone+"=1")
	_ = unix.Exec("/proc/self/exe", os.Args, env) // returns only if it failed
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(cur), 0, 0, 0)
	return nil
}
