// The real granary binary, built once for the package's tests, run with a
// container's resolved args and environment.
package deploy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// granaryBin is the binary TestMain built.
var granaryBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "granary-deploy-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	granaryBin = filepath.Join(dir, "granary")
	build := exec.Command("go", "build", "-o", granaryBin, "../cmd/granary")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building granary:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// environ is a process environment of exactly env, plus PATH (a
// container does not inherit the test's GRANARY_* variables).
func environ(env map[string]string) []string {
	out := []string{"PATH=" + os.Getenv("PATH")}
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

// effective is what `serve --print-config` reports that the tests check.
type effective struct {
	Listen     string `yaml:"listen"`
	DataDir    string `yaml:"data-dir"`
	RAM        string `yaml:"ram"`
	Disk       string `yaml:"disk"`
	DirtyLimit string `yaml:"dirty-limit"`
	NodeID     string `yaml:"node-id"`
	Join       string `yaml:"join"`
	Advertise  string `yaml:"advertise"`
	GossipBind string `yaml:"gossip-bind"`
	SecretFile string `yaml:"cluster-secret-file"`
}

// printConfig runs `granary serve ARGS --print-config`: granary's own
// flags, environment and file parsing, with nothing started.
func printConfig(t *testing.T, rc *container) effective {
	t.Helper()
	args := append(append([]string{}, rc.args...), "--print-config")
	cmd := exec.Command(granaryBin, args...)
	cmd.Env = environ(rc.env)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("granary %q: %v\n%s", rc.args, err, stderr)
	}
	var e effective
	if err := yaml.Unmarshal(out, &e); err != nil {
		t.Fatalf("print-config: %v\n%s", err, out)
	}
	return e
}

// served is a running `granary serve`.
type served struct {
	url  string
	cmd  *exec.Cmd
	done chan error
}

var bannerURL = regexp.MustCompile(`Granary is serving S3 at (https?://\S+)`)

// serve starts granary with args and env, and waits (bounded) for its
// banner. It is stopped with SIGTERM when the test ends.
func serve(t *testing.T, args []string, env map[string]string) *served {
	t.Helper()
	cmd := exec.Command(granaryBin, args...)
	cmd.Env = environ(env)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &served{cmd: cmd, done: make(chan error, 1)}
	urls := make(chan string, 1)
	var log []byte
	logDone := make(chan struct{})
	go func() {
		defer close(logDone)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			log = append(append(log, sc.Bytes()...), '\n')
			if m := bannerURL.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case urls <- m[1]:
				default:
				}
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	go func() { <-logDone; s.done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(60 * time.Second):
			cmd.Process.Kill()
			<-s.done
		}
	})
	select {
	case s.url = <-urls:
		return s
	case err := <-s.done:
		t.Fatalf("granary %q exited: %v\n%s", args, err, log)
	case <-time.After(2 * time.Minute):
		t.Fatalf("granary %q: no banner after 2 minutes", args)
	}
	return nil
}

// stop sends SIGTERM and waits for a clean exit.
func (s *served) stop(t *testing.T) {
	t.Helper()
	s.cmd.Process.Signal(syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	select {
	case err := <-s.done:
		s.done <- err // for the cleanup
		if err != nil {
			t.Fatalf("granary exited with %v after SIGTERM", err)
		}
	case <-ctx.Done():
		t.Fatal("granary did not stop within a minute of SIGTERM")
	}
}
