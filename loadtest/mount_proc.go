// A running `granary mount` child process: started, awaited until the
// kernel lists its mountpoint, and unmounted with SIGTERM.
package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// mountProc is one `granary mount` process.
type mountProc struct {
	cmd    *exec.Cmd
	dir    string // the mountpoint
	log    *os.File
	exited chan struct{} // closed once cmd.Wait returned; then waitErr is set
	// waitErr is cmd.Wait's result, read only after exited is closed.
	waitErr error

	stopOnce sync.Once
	stopErr  error // stop's result, set once by stopOnce
}

// mountSupport tells whether bin has the mount command.
func mountSupport(bin string) error {
	out, err := exec.Command(bin, "mount", "--help").CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("--max-memory")) {
		return fmt.Errorf("%s mount --help: %v (the mount scenario needs the mount command with --max-memory)\n%s", bin, err, out)
	}
	return nil
}

// startMount mounts bucket of the S3 endpoint (a granary node's URL) at
// dir with bin, and returns once the kernel lists dir as a mountpoint;
// the process logs to logPath.
func startMount(bin, endpoint, access, secret, bucket, dir, logPath string, maxMemory int64, flags ...string) (*mountProc, error) {
	m := &mountProc{dir: dir, exited: make(chan struct{})}
	args := append([]string{"mount", "--endpoint", endpoint, "--max-memory", sizeName(maxMemory)}, flags...)
	m.cmd = exec.Command(bin, append(args, bucket, dir)...)
	m.cmd.Env = append(os.Environ(), "GRANARY_ACCESS_KEY="+access, "GRANARY_SECRET_KEY="+secret)
	var err error
	if m.log, err = os.Create(logPath); err != nil {
		return nil, err
	}
	m.cmd.Stdout, m.cmd.Stderr = m.log, m.log
	if err := m.cmd.Start(); err != nil {
		m.log.Close()
		return nil, err
	}
	go func() { m.waitErr = m.cmd.Wait(); close(m.exited) }()
	if err := m.awaitMounted(30 * time.Second); err != nil {
		m.stop()
		return nil, err
	}
	return m, nil
}

// awaitMounted polls /proc/self/mountinfo until it lists m.dir, the
// process exits, or limit passes.
func (m *mountProc) awaitMounted(limit time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	for {
		ok, err := isMountpoint(m.dir)
		if err != nil || ok {
			return err
		}
		select {
		case <-m.exited:
			return fmt.Errorf("granary mount exited before mounting (%v):\n%s", m.waitErr, m.tail())
		case <-ctx.Done():
			return fmt.Errorf("%s not mounted after %v:\n%s", m.dir, limit, m.tail())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// isMountpoint tells whether /proc/self/mountinfo lists dir as a
// mountpoint (its fifth field; dir must need no octal escapes).
func isMountpoint(dir string) (bool, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == dir {
			return true, nil
		}
	}
	return false, nil
}

// peakRSS is the process's peak resident set (VmHWM) in bytes.
func (m *mountProc) peakRSS() (int64, error) {
	return (&granaryProc{cmd: m.cmd}).peakRSS()
}

// stop sends SIGTERM and waits (at most 20 s) for the process to exit;
// it returns nil only if the process exited 0 and the kernel no longer
// lists the mountpoint. A process that does not exit is killed and its
// mount removed lazily. Later calls return the first call's result.
func (m *mountProc) stop() error {
	m.stopOnce.Do(func() {
		defer m.log.Close()
		m.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-m.exited:
			m.stopErr = m.waitErr
		case <-time.After(20 * time.Second):
			m.cmd.Process.Kill()
			<-m.exited
			m.stopErr = fmt.Errorf("granary mount still running 20s after SIGTERM; killed")
		}
		if m.stopErr != nil {
			m.stopErr = fmt.Errorf("granary mount: %w\n%s", m.stopErr, m.tail())
		}
		if still, _ := isMountpoint(m.dir); still {
			exec.Command("fusermount3", "-u", "-z", m.dir).Run()
			if m.stopErr == nil {
				m.stopErr = fmt.Errorf("%s still mounted after granary mount exited", m.dir)
			}
		}
	})
	return m.stopErr
}

// tail returns the end of the process's log.
func (m *mountProc) tail() string {
	b, _ := os.ReadFile(m.log.Name())
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// mountDirs makes dir/name, a mountpoint, and returns it with the path
// of the mount's log.
func mountDirs(dir, name string) (mnt, logPath string, err error) {
	mnt = filepath.Join(dir, name)
	return mnt, filepath.Join(dir, name+".log"), os.Mkdir(mnt, 0o755)
}
