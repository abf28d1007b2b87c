// `granary mount --supervise`: a parent process that runs the mount in a
// worker process and, when the worker dies, starts another: on the same
// FUSE connection, so that open files and working directories carry on
// (session.go), or, where it cannot hold one, after removing the dead
// mount, so that readers which reopen their files carry on.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/granary-dev/granary/fuse"
)

// Restart back-off: the delay before a new worker starts doubles from
// minRestartDelay up to maxRestartDelay, and falls back to the minimum
// once a worker has run for resetRestartAfter.
const (
	minRestartDelay   = 100 * time.Millisecond
	maxRestartDelay   = 5 * time.Second
	resetRestartAfter = 30 * time.Second
	// workerStopWait bounds how long a worker may take to unmount after
	// SIGTERM before it is killed.
	workerStopWait = 15 * time.Second
	// workerReadyFD is the worker's descriptor for the supervisor's ready
	// pipe: the first of exec.Cmd's ExtraFiles.
	workerReadyFD = 3
)

// workerCommand returns the command that runs a mount worker with args, a
// `granary mount` command line without --supervise: this same binary.
// Tests replace it to re-execute the test binary (see TestMain).
var workerCommand = func(args []string) (*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("supervisor: cannot find its own binary: %w", err)
	}
	return exec.Command(exe, args...), nil
}

// workerArgs is the worker's command line: mount, every flag the user set
// but --supervise, the ready pipe, then BUCKET and the absolute MOUNTPOINT.
func workerArgs(fs *pflag.FlagSet, bucket, dir string) []string {
	args := []string{"mount"}
	fs.Visit(func(f *pflag.Flag) {
		if f.Name != "supervise" && f.Name != "ready-fd" {
			args = append(args, "--"+f.Name+"="+f.Value.String())
		}
	})
	return append(args, fmt.Sprintf("--ready-fd=%d", workerReadyFD), "--", bucket, dir)
}

// supervise runs workers until ctx ends (then it stops the worker and
// returns nil), a worker exits 0 (it was unmounted by hand), or the first
// worker fails before it ever mounted (a bad bucket or credentials: its
// error, not a restart loop). A worker that dies in any other way is
// replaced: on the same FUSE connection if the supervisor holds one (see
// session.go; opts nil: never; resend false: as on a kernel without
// FUSE_NOTIFY_RESEND), else after its dead mount at dir is removed.
func supervise(ctx context.Context, opts *fuse.Options, resend bool, args []string, dir string, w io.Writer) error {
	var sess *session
	if opts != nil {
		var err error
		if sess, err = openSession(dir, *opts, resend, w); err != nil {
			return err
		}
	}
	defer func() { sess.close(w) }()
	b := backoff{delay: minRestartDelay}
	everMounted := false
	for {
		wargs, extra := sess.worker(args)
		res, err := runWorker(ctx, wargs, extra, dir, w)
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			fmt.Fprintf(w, "granary: supervisor: stopped\n")
			return nil
		}
		if res.state.Success() {
			fmt.Fprintf(w, "granary: supervisor: worker pid %d exited cleanly (%s was unmounted); exiting\n", res.pid, dir)
			return nil
		}
		if !everMounted && !res.mounted {
			return fmt.Errorf("supervisor: the mount worker failed before mounting (%s)", res.state)
		}
		everMounted = everMounted || res.mounted
		delay := b.next(res, sess != nil)
		fmt.Fprintf(w, "granary: supervisor: worker pid %d ended (%s) after %s; restarting in %s\n",
			res.pid, res.state, res.lived.Round(time.Millisecond), delay)
		if sess != nil && b.quick > maxQuickRestarts {
			// A request that kills every worker would be resent to
			// each for ever: end the session, failing it.
			fmt.Fprintf(w, "granary: supervisor: %d workers in a row died within %s; remounting\n", b.quick, resetRestartAfter)
			sess.close(w)
			sess = nil
		}
		if sess = sess.carryOn(w); sess == nil {
			if err := cleanDeadMount(dir); err != nil {
				// The next worker fails to mount and is retried in turn.
				fmt.Fprintf(w, "granary: supervisor: %v\n", err)
			}
		}
		select {
		case <-ctx.Done():
			fmt.Fprintf(w, "granary: supervisor: stopped\n")
			return nil
		case <-time.After(delay):
		}
	}
}

// backoff spaces restarts. Without a session, the delay doubles from
// minRestartDelay up to maxRestartDelay while workers die young (sooner
// than resetRestartAfter). With one, the kernel holds the trainer's
// requests meanwhile, so a worker that had mounted is replaced at once,
// up to maxQuickRestarts young deaths in a row; past that (or for a
// worker that died before mounting) the delays double again.
type backoff struct {
	delay time.Duration // the next doubling delay
	quick int           // workers in a row that died young
}

// maxQuickRestarts bounds the immediate restarts of a session in a row.
const maxQuickRestarts = 8

// next returns the delay before the worker that replaces res's.
func (b *backoff) next(res workerResult, session bool) time.Duration {
	if res.lived >= resetRestartAfter {
		b.delay, b.quick = minRestartDelay, 0
	}
	b.quick++
	if session && res.mounted && b.quick <= maxQuickRestarts {
		return 0
	}
	d := b.delay
	b.delay = min(2*b.delay, maxRestartDelay)
	return d
}

// workerResult is how one worker ended.
type workerResult struct {
	pid     int
	mounted bool // it reported a mount on the ready pipe
	lived   time.Duration
	state   *os.ProcessState
}

// runWorker starts one worker and waits until it exits; if ctx ends first,
// it stops the worker (SIGTERM, then SIGKILL after workerStopWait) and
// removes a mount the worker left. The error is for a worker that could
// not be started at all.
func runWorker(ctx context.Context, args []string, extra []*os.File, dir string, w io.Writer) (workerResult, error) {
	rd, wr, err := os.Pipe()
	if err != nil {
		return workerResult{}, fmt.Errorf("supervisor: %w", err)
	}
	defer rd.Close()
	cmd, err := workerCommand(args)
	if err != nil {
		wr.Close()
		return workerResult{}, err
	}
	cmd.ExtraFiles = append([]*os.File{wr}, extra...) // workerReadyFD, then extra
	cmd.Stdout, cmd.Stderr = w, w
	// A worker outlives no supervisor: if this one is killed, the worker
	// gets SIGTERM and unmounts. (Pdeathsig follows the OS thread that
	// started the child; Go ends threads only for goroutines that exit
	// while locked to one, which nothing here does.)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	start := time.Now()
	err = cmd.Start()
	wr.Close() // the worker holds its own copy; EOF on rd once it is gone
	if err != nil {
		return workerResult{}, fmt.Errorf("supervisor: start the mount worker: %w", err)
	}
	res := workerResult{pid: cmd.Process.Pid}
	fmt.Fprintf(w, "granary: supervisor: started mount worker pid %d\n", res.pid)
	ready := make(chan bool, 1)
	go func() {
		var b [1]byte
		n, _ := rd.Read(b[:])
		ready <- n == 1
	}()
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }() // the exit status is in ProcessState
	for done := false; !done; {
		select {
		case res.mounted = <-ready:
			ready = nil
		case <-exited:
			done = true
		case <-ctx.Done():
			stopWorker(cmd, exited, w)
			if err := cleanDeadMount(dir); err != nil {
				fmt.Fprintf(w, "granary: supervisor: %v\n", err)
			}
			done = true
		}
	}
	if ready != nil {
		// The worker is gone, so its end of the pipe is closed (the worker
		// keeps the descriptor from its own children): this returns at once.
		res.mounted = <-ready
	}
	res.lived, res.state = time.Since(start), cmd.ProcessState
	return res, nil
}

// stopWorker sends SIGTERM to the worker and waits (bounded) for it to
// exit, then kills it.
func stopWorker(cmd *exec.Cmd, exited <-chan struct{}, w io.Writer) {
	_ = cmd.Process.Signal(syscall.SIGTERM) // fails only if it has exited
	select {
	case <-exited:
		return
	case <-time.After(workerStopWait):
	}
	fmt.Fprintf(w, "granary: supervisor: worker pid %d did not stop within %s; killing it\n", cmd.Process.Pid, workerStopWait)
	_ = cmd.Process.Kill()
	<-exited
}

// cleanDeadMount removes a FUSE mount at dir, if there is one, lazily:
// after its process died it only answers "Transport endpoint is not
// connected". As root this is umount2(MNT_DETACH); otherwise fusermount3.
func cleanDeadMount(dir string) error {
	mounted, err := fuse.IsMounted(dir)
	if err != nil || !mounted {
		return err
	}
	uerr := syscall.Unmount(dir, syscall.MNT_DETACH)
	if uerr == nil {
		return nil
	}
	out, ferr := exec.Command("fusermount3", "-u", "-z", dir).CombinedOutput()
	if ferr != nil {
		return fmt.Errorf("remove the dead mount at %s: umount: %v; fusermount3: %v: %s",
			dir, uerr, ferr, strings.TrimSpace(string(out)))
	}
	return nil
}
