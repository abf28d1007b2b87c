// A granary process runs with the timer slack it is given
// (GRANARY_TIMER_SLACK, 200 µs by default) on every thread, those made
// before its code ran included.
package main

import (
	"fmt"
	"os"
	"path/filepath"
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
		{env: map[string]string{timerSlackEnv: "10ms"}, want: maxTimerSlack},
		{env: map[string]string{timerSlackEnv: "11ms"}, bad: true},
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

// TestProcessRunsWithTimerSlack: a real process (the test binary started
// as `granary serve`, which adopts its slack as main does) runs with the
// slack asked for on every thread, sysmon's included; with
// GRANARY_TIMER_SLACK=0 each keeps the slack it was made with.
func TestProcessRunsWithTimerSlack(t *testing.T) {
	own := slackOf(t, os.Getpid())
	want := 3 * time.Millisecond // unlike any slack the test could inherit
	c := startChild(t, map[string]string{timerSlackEnv: want.String()}, "--data-dir", t.TempDir())
	slacks := threadSlacks(t, c.cmd.Process.Pid)
	for tid, got := range slacks {
		if got != want {
			t.Errorf("thread %s of serve runs with a slack of %v, want %v", tid, got, want)
		}
	}
	if len(slacks) < 3 {
		t.Errorf("serve has %d threads; a Go process has at least its main thread, sysmon and one more", len(slacks))
	}
	c.stop(t)
	c = startChild(t, map[string]string{timerSlackEnv: "0"}, "--data-dir", t.TempDir())
	for tid, got := range threadSlacks(t, c.cmd.Process.Pid) {
		if got != own {
			t.Errorf("thread %s of serve with %s=0 runs with a slack of %v, want the %v it started with", tid, timerSlackEnv, got, own)
		}
	}
	c.stop(t)
}

// threadSlacks reads the timer slack of every thread of process pid.
func threadSlacks(t *testing.T, pid int) map[string]time.Duration {
	t.Helper()
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", pid))
	if err != nil || len(tasks) == 0 {
		t.Fatalf("no threads of %d: %v", pid, err)
	}
	out := map[string]time.Duration{}
	for _, task := range tasks {
		tid, err := strconv.Atoi(filepath.Base(task))
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(task)] = slackOf(t, tid)
	}
	return out
}

// slackOf reads the timer slack of thread tid.
func slackOf(t *testing.T, tid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/timerslack_ns", tid))
	if err != nil {
		t.Fatal(err)
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return time.Duration(ns)
}
