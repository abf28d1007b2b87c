// A granary process runs with the timer slack it is given
// (GRANARY_TIMER_SLACK, 2 ms by default) on every thread, those made
// before its code ran included.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
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
	if executedAgain(t, c.cmd.Process.Pid) {
		t.Error("serve, free to set its threads' slack, executed itself again")
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

// TestUnprivilegedProcessRunsWithTimerSlack: a process that may not set
// its other threads' slack (no CAP_SYS_NICE: here it runs as nobody)
// executes itself again with its own thread's, once, so every thread
// of the image that serves has it.
func TestUnprivilegedProcessRunsWithTimerSlack(t *testing.T) {
	bin, data := nobodyCopy(t)
	asNobody := func(_ string, args ...string) *exec.Cmd {
		cmd := exec.Command(bin, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
		return cmd
	}
	want := 3 * time.Millisecond
	c := spawnChild(t, asNobody, nil, map[string]string{timerSlackEnv: want.String()}, "--data-dir", data)
	for tid, got := range threadSlacks(t, c.cmd.Process.Pid) {
		if got != want {
			t.Errorf("thread %s of an unprivileged serve runs with a slack of %v, want %v", tid, got, want)
		}
	}
	if !executedAgain(t, c.cmd.Process.Pid) {
		t.Error("an unprivileged serve was not executed again with its slack")
	}
	c.stop(t)
}

// nobody is the user an unprivileged child runs as.
const nobody = 65534

// nobodyCopy copies the test binary where nobody may run it, and makes
// a data directory nobody owns.
func nobodyCopy(t *testing.T) (bin, data string) {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(dir, "granary.test")
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	data = filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(data, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	return bin, data
}

// executedAgain reports whether process pid's image was executed with
// the mark adoptTimerSlack sets (its environment as executed).
func executedAgain(t *testing.T, pid int) bool {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatal(err)
	}
	return slices.Contains(strings.Split(string(b), "\x00"), timerSlackExecuted+"=1")
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
