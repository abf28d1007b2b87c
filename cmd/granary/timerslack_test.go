// A granary process runs with the timer slack it is given (GRANARY_TIMER_SLACK,
// 200 µs by default), set before its first thread was made.
package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestTimerSlackSetting(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want time.Duration
		bad  bool
	}{
		{env: nil, want: defaultTimerSlack},
		{env: map[string]string{timerSlackEnv: ""}, want: defaultTimerSlack},
		{env: map[string]string{timerSlackEnv: "0"}, want: 0},
		{env: map[string]string{timerSlackEnv: "1ms"}, want: time.Millisecond},
		{env: map[string]string{timerSlackEnv: "200"}, bad: true},
		{env: map[string]string{timerSlackEnv: "-1us"}, bad: true},
	} {
		got, err := timerSlack(envMap(c.env))
		if c.bad != (err != nil) || got != c.want {
			t.Errorf("%v: %v, %v; want %v (an error: %v)", c.env, got, err, c.want, c.bad)
		}
		if err != nil && !strings.Contains(err.Error(), timerSlackEnv) {
			t.Errorf("%v: the error does not name %s: %v", c.env, timerSlackEnv, err)
		}
	}
}

// TestTimerSlackOnce: a process executed again with its slack does not
// execute itself a third time, and does not pass the mark on.
func TestTimerSlackOnce(t *testing.T) {
	t.Setenv(timerSlackDone, "1")
	if err := adoptTimerSlack(os.LookupEnv); err != nil {
		t.Fatal(err)
	}
	if _, ok := os.LookupEnv(timerSlackDone); ok {
		t.Errorf("%s is still set for the processes this one starts", timerSlackDone)
	}
}

// TestProcessRunsWithTimerSlack: a real process (the test binary started
// as `granary serve`, which adopts its slack as main does) runs with the
// default slack, or with the one it started with under
// GRANARY_TIMER_SLACK=0.
func TestProcessRunsWithTimerSlack(t *testing.T) {
	own := slackOf(t, os.Getpid())
	if own >= defaultTimerSlack {
		t.Skipf("the test runs with a slack of %v already", own)
	}
	c := startChild(t, nil, "--data-dir", t.TempDir())
	if got := slackOf(t, c.cmd.Process.Pid); got != defaultTimerSlack {
		t.Errorf("serve runs with a slack of %v, want %v", got, defaultTimerSlack)
	}
	// The image running was executed with the slack set (so every thread
	// has it, not only the one that set it): its environment has the mark.
	if !executedAgain(t, c.cmd.Process.Pid) {
		t.Error("serve was not executed again with its slack")
	}
	c.stop(t)
	c = startChild(t, map[string]string{timerSlackEnv: "0"}, "--data-dir", t.TempDir())
	if got := slackOf(t, c.cmd.Process.Pid); got != own {
		t.Errorf("serve with %s=0 runs with a slack of %v, want the %v it started with", timerSlackEnv, got, own)
	}
	if executedAgain(t, c.cmd.Process.Pid) {
		t.Errorf("serve with %s=0 was executed again", timerSlackEnv)
	}
	c.stop(t)
}

// executedAgain reports whether process pid's image was executed with
// the mark adoptTimerSlack sets.
func executedAgain(t *testing.T, pid int) bool {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatal(err)
	}
	return slices.Contains(strings.Split(string(b), "\x00"), timerSlackDone+"=1")
}

// slackOf reads the timer slack of process pid's main thread.
func slackOf(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/timerslack_ns", pid))
	if err != nil {
		t.Fatal(err)
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return time.Duration(ns)
}
