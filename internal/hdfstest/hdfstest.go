// Package hdfstest starts the test HDFS cluster (the hdfsd process: one
// namenode, one datanode, state in a directory) for tests that use the
// colinmarc/hdfs/v2 client. It imports neither the v1 protocol packages nor
// the v2 client, so it links beside either; hdfsd is built once per test
// binary with `go build` and run as a child process.
package hdfstest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Bounds on the child process's life cycle.
const (
	buildTimeout = 3 * time.Minute
	readyTimeout = 30 * time.Second
	stopTimeout  = 10 * time.Second
)

// Options configure one hdfsd. The zero value is an active namenode with a
// fresh state directory.
type Options struct {
	// Dir is the state directory; "" means a new t.TempDir(). Reusing the
	// Dir of a stopped Server restarts the same namespace.
	Dir string
	// Standby answers every namenode call with StandbyException.
	Standby bool
	// SafeMode fails every mutation with SafeModeException.
	SafeMode bool
	// DirOwner owns directories without recorded metadata, the root
	// among them (mode 0777); "" means "hdfs". User "hdfs" is the
	// superuser.
	DirOwner string
	// NameNode and DataNode are listen addresses; "" means 127.0.0.1:0.
	NameNode, DataNode string
}

// Server is a running hdfsd.
type Server struct {
	NameNode string // namenode RPC address, HOST:PORT
	DataNode string // datanode transfer address, HOST:PORT
	Dir      string // state directory

	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	once sync.Once
}

var build struct {
	once sync.Once
	bin  string
	err  error
}

// binaryDirs is the pattern of the directories binary builds into;
// one older than staleAfter belongs to a test binary long gone (go test
// times out far sooner), and the next build removes it.
const (
	binaryDirs = "granary-hdfsd-"
	staleAfter = 24 * time.Hour
)

// binary builds hdfsd once per test binary. The binary lives in a
// temporary directory that outlives the tests (nothing runs when a test
// binary ends); the next day's builds remove it.
func binary() (string, error) {
	build.once.Do(func() {
		_, self, _, _ := runtime.Caller(0)
		removeStale(os.TempDir(), time.Now().Add(-staleAfter))
		dir, err := os.MkdirTemp("", binaryDirs)
		if err != nil {
			build.err = err
			return
		}
		build.bin = filepath.Join(dir, "hdfsd")
		ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, "go", "build", "-o", build.bin, "./hdfsd")
		cmd.Dir = filepath.Dir(self)
		if out, err := cmd.CombinedOutput(); err != nil {
			build.err = fmt.Errorf("go build hdfsd: %v\n%s", err, out)
		}
	})
	return build.bin, build.err
}

// removeStale removes the build directories in dir last changed before
// cutoff. It is best effort: what it cannot remove stays.
func removeStale(dir string, cutoff time.Time) {
	old, _ := filepath.Glob(filepath.Join(dir, binaryDirs+"*"))
	for _, d := range old {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() && fi.ModTime().Before(cutoff) {
			os.RemoveAll(d)
		}
	}
}

// Start builds (once) and runs an hdfsd, waits until it listens and stops
// it when the test ends. It fails the test on any error.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	bin, err := binary()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Dir: opts.Dir, done: make(chan struct{})}
	if s.Dir == "" {
		s.Dir = t.TempDir()
	}
	logPath := filepath.Join(s.Dir, "hdfsd.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close() // the child keeps its own descriptor
	ready := &readyWriter{line: make(chan string, 1)}
	s.cmd = exec.Command(bin, opts.args(s.Dir)...)
	s.cmd.Stdout, s.cmd.Stderr = ready, logFile
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start hdfsd: %v", err)
	}
	go func() { s.cmd.Wait(); close(s.done) }()
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			if b, err := os.ReadFile(logPath); err == nil && len(b) > 0 {
				t.Logf("hdfsd log:\n%s", b)
			}
		}
	})
	if err := s.awaitReady(ready.line); err != nil {
		s.Stop()
		t.Fatal(err)
	}
	return s
}

func (o Options) args(dir string) []string {
	args := []string{"-dir", dir, "-v"}
	if o.NameNode != "" {
		args = append(args, "-nn", o.NameNode)
	}
	if o.DataNode != "" {
		args = append(args, "-dn", o.DataNode)
	}
	if o.Standby {
		args = append(args, "-standby")
	}
	if o.SafeMode {
		args = append(args, "-safemode")
	}
	if o.DirOwner != "" {
		args = append(args, "-user-dir-owner", o.DirOwner)
	}
	return args
}

// awaitReady waits, bounded, for the ready line and parses the addresses.
func (s *Server) awaitReady(lines <-chan string) error {
	timer := time.NewTimer(readyTimeout)
	defer timer.Stop()
	select {
	case line := <-lines:
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "nn="); ok {
				s.NameNode = v
			} else if v, ok := strings.CutPrefix(f, "dn="); ok {
				s.DataNode = v
			}
		}
		if s.NameNode == "" || s.DataNode == "" {
			return fmt.Errorf("hdfsd: bad ready line %q", line)
		}
		return nil
	case <-s.done:
		return fmt.Errorf("hdfsd exited before it was ready: %v", s.cmd.ProcessState)
	case <-timer.C:
		return fmt.Errorf("hdfsd not ready after %v", readyTimeout)
	}
}

// Stop terminates the process (SIGTERM, then SIGKILL after a bound) and
// waits for it to exit. It is safe to call more than once.
func (s *Server) Stop() {
	s.once.Do(func() {
		s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(stopTimeout):
			s.cmd.Process.Kill()
			<-s.done
		}
	})
}

// readyWriter is the child's stdout: it hands the first "hdfsd ready" line
// to line and discards everything else.
type readyWriter struct {
	mu   sync.Mutex // guards buf and sent
	buf  bytes.Buffer
	sent bool
	line chan string // buffered, receives at most one line
}

func (w *readyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.sent {
		return len(p), nil
	}
	w.buf.Write(p)
	for {
		line, err := w.buf.ReadString('\n')
		if err != nil { // a partial line: keep it for the next write
			rest := line
			w.buf.Reset()
			w.buf.WriteString(rest)
			return len(p), nil
		}
		if strings.HasPrefix(line, "hdfsd ready ") {
			w.sent = true
			w.line <- strings.TrimSpace(line)
			return len(p), nil
		}
	}
}
