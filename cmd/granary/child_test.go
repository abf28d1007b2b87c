// Real `granary serve` processes for tests that must kill one: the test
// binary re-executes itself as the node (see TestMain), so a SIGKILL hits
// a whole process with its open files, exactly as a pre-emption would.
package main

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/granary-dev/granary/internal/netnstest"
	"github.com/granary-dev/granary/internal/syncbuf"
)

// childArgsEnv carries a child's command line (JSON) to TestMain;
// childActivatedEnv says the child's listener is its descriptor 3 (see
// listen.go), which TestMain passes on as systemd would.
const (
	childArgsEnv      = "GRANARY_TEST_CHILD_ARGS"
	childActivatedEnv = "GRANARY_TEST_CHILD_ACTIVATED"
)

func TestMain(m *testing.M) {
	workerCommand = testWorkerCommand // a supervisor's worker is the test binary too
	if raw := os.Getenv(childArgsEnv); raw != "" {
		var args []string
		if err := json.Unmarshal([]byte(raw), &args); err != nil {
			os.Exit(exitUsage)
		}
		startWithTimerSlack() // as main does
		if os.Getenv(childActivatedEnv) != "" {
			os.Setenv("LISTEN_FDS", "1")
			os.Setenv("LISTEN_PID", strconv.Itoa(os.Getpid()))
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := execute(ctx, args, os.Stdout, os.Stderr, os.LookupEnv)
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// child is a `granary serve` process.
type child struct {
	cmd    *exec.Cmd
	addr   string
	gossip string // the gossip address its banner names, if it gossips
	stderr *syncbuf.Buffer
	exited chan struct{}
}

// startChild runs `granary serve --listen 127.0.0.1:0 args` with env added
// to the test's environment, and waits (bounded) for its address. The
// process is killed when the test ends, if it still runs.
func startChild(t *testing.T, env map[string]string, args ...string) *child {
	t.Helper()
	return startChildOn(t, nil, env, args...)
}

// startChildOn is startChild serving on ln, which the test bound (and
// closes here: the child holds its own descriptor), if ln is set: the
// address is the test's before the child starts, with no window in which
// another process could take it.
func startChildOn(t *testing.T, ln *net.TCPListener, env map[string]string, args ...string) *child {
	t.Helper()
	return spawnChild(t, exec.Command, ln, env, args...)
}

// startChildIn is startChild on host h of a netnstest segment (args name
// the --listen address, an address of h).
func startChildIn(t *testing.T, h *netnstest.Host, env map[string]string, args ...string) *child {
	t.Helper()
	return spawnChild(t, h.Command, nil, env, args...)
}

// spawnChild starts the child with command (exec.Command, or a host's)
// and waits for its banner.
func spawnChild(t *testing.T, command func(string, ...string) *exec.Cmd, ln *net.TCPListener, env map[string]string, args ...string) *child {
	t.Helper()
	argv, _ := json.Marshal(append([]string{"serve", "--listen", "127.0.0.1:0"}, args...))
	c := &child{cmd: command(os.Args[0], "-test.run=^$"), stderr: &syncbuf.Buffer{}, exited: make(chan struct{})}
	c.cmd.Env = append(os.Environ(), childArgsEnv+"="+string(argv))
	for k, v := range env {
		c.cmd.Env = append(c.cmd.Env, k+"="+v)
	}
	if ln != nil {
		f, err := ln.File()
		ln.Close()
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		c.cmd.ExtraFiles = []*os.File{f} // descriptor 3
		c.cmd.Env = append(c.cmd.Env, childActivatedEnv+"=1")
	}
	c.cmd.Stderr = c.stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.cmd.Wait(); close(c.exited) }()
	t.Cleanup(func() { c.kill(t) })
	deadline := time.After(60 * time.Second)
	for c.addr == "" {
		if m := servingRE.FindStringSubmatch(c.stderr.String()); m != nil {
			c.addr = m[1]
			// The banner is one write: its gossip line is there too.
			if g := gossipRE.FindStringSubmatch(c.stderr.String()); g != nil {
				c.gossip = g[1]
			}
			break
		}
		select {
		case <-c.exited:
			t.Fatalf("serve exited early:\n%s", c.stderr.String())
		case <-deadline:
			t.Fatalf("serve printed no address:\n%s", c.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return c
}

// kill sends SIGKILL and waits for the process to be gone.
func (c *child) kill(t *testing.T) {
	c.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-c.exited:
	case <-time.After(30 * time.Second):
		t.Errorf("serve survived SIGKILL")
	}
}

// stop sends SIGTERM and checks the node shuts down cleanly.
func (c *child) stop(t *testing.T) {
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
		if code := c.cmd.ProcessState.ExitCode(); code != exitOK {
			t.Errorf("serve exited with %d:\n%s", code, c.stderr.String())
		}
	case <-time.After(45 * time.Second):
		t.Errorf("serve did not stop on SIGTERM:\n%s", c.stderr.String())
	}
}
