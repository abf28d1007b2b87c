// The hdfs-epochs scenario's test cluster process: hdfsd built from
// internal/hdfstest/hdfsd, started over a fresh state directory, ready
// once it prints its addresses, stopped with SIGTERM.
package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// hdfsdReadyTimeout bounds the wait for hdfsd's ready line.
const hdfsdReadyTimeout = 30 * time.Second

// buildHDFSD builds hdfsd into a temp dir (the loadtest runs from the
// repository root, as `go run ./loadtest` does); cleanup removes it.
func buildHDFSD(ctx context.Context) (bin string, cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "granary-loadtest-hdfsd-")
	if err != nil {
		return "", nil, err
	}
	bin = filepath.Join(dir, "hdfsd")
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "./internal/hdfstest/hdfsd").CombinedOutput()
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("go build ./internal/hdfstest/hdfsd (run from the repository root): %v\n%s", err, out)
	}
	return bin, func() { os.RemoveAll(dir) }, nil
}

// hdfsdProc is a running hdfsd.
type hdfsdProc struct {
	cmd    *exec.Cmd
	dir    string // state directory, with hdfsd.log
	nn, dn string // listen addresses from the ready line
	exited chan struct{}
}

// startHDFSD runs bin over a fresh state directory with args added and
// waits, bounded, for its ready line.
func startHDFSD(bin string, args ...string) (*hdfsdProc, error) {
	dir, err := os.MkdirTemp("", "granary-loadtest-hdfs-")
	if err != nil {
		return nil, err
	}
	p := &hdfsdProc{dir: dir, exited: make(chan struct{})}
	logFile, err := os.Create(filepath.Join(dir, "hdfsd.log"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	defer logFile.Close() // the child holds its own descriptor
	p.cmd = exec.Command(bin, append([]string{"-dir", filepath.Join(dir, "state")}, args...)...)
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	p.cmd.Stderr = logFile
	if err := startCmdOn(pins.origin, p.cmd); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	ready := make(chan string, 1)
	go func() {
		// Hand over the ready line, then drain stdout until the child
		// exits; Wait runs only after the pipe reaches EOF.
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "hdfsd ready ") {
				select {
				case ready <- sc.Text():
				default:
				}
			}
		}
		io.Copy(io.Discard, stdout)
		p.cmd.Wait()
		close(p.exited)
	}()
	if err := p.awaitReady(ready); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

// awaitReady waits for the ready line, the child's exit or the timeout.
func (p *hdfsdProc) awaitReady(ready <-chan string) error {
	timer := time.NewTimer(hdfsdReadyTimeout)
	defer timer.Stop()
	select {
	case line := <-ready:
		var ok bool
		if p.nn, p.dn, ok = parseHDFSDReady(line); !ok {
			return fmt.Errorf("hdfsd: bad ready line %q", line)
		}
		return nil
	case <-p.exited:
		return fmt.Errorf("hdfsd exited before it was ready:\n%s", p.logTail())
	case <-timer.C:
		return fmt.Errorf("hdfsd not ready after %v:\n%s", hdfsdReadyTimeout, p.logTail())
	}
}

// parseHDFSDReady parses "hdfsd ready nn=HOST:PORT dn=HOST:PORT".
func parseHDFSDReady(line string) (nn, dn string, ok bool) {
	f := strings.Fields(line)
	if len(f) != 4 || f[0] != "hdfsd" || f[1] != "ready" {
		return "", "", false
	}
	nn, okNN := strings.CutPrefix(f[2], "nn=")
	dn, okDN := strings.CutPrefix(f[3], "dn=")
	if !okNN || !okDN || !strings.Contains(nn, ":") || !strings.Contains(dn, ":") {
		return "", "", false
	}
	return nn, dn, true
}

// logTail returns the end of hdfsd's log.
func (p *hdfsdProc) logTail() string {
	b, _ := os.ReadFile(filepath.Join(p.dir, "hdfsd.log"))
	if len(b) > 4096 {
		b = b[len(b)-4096:]
	}
	return string(bytes.TrimSpace(b))
}

// stop sends SIGTERM, waits up to 10 s (then kills) and removes the
// state directory.
func (p *hdfsdProc) stop() {
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-p.exited
	}
	os.RemoveAll(p.dir)
}
