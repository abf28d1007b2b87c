// Package miniotest starts a real MinIO server on a free loopback port for
// tests (or on an address of another host: Options.Host and Command), over
// HTTP or HTTPS. The binary comes from $MINIO_BIN, else
// $GOPATH/bin/minio (the Makefile installs it there with `go install`).
package miniotest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Options change how a server starts; the zero value serves plain HTTP.
type Options struct {
	// CertsDir, if set, makes the server speak HTTPS with the pair in it
	// (MinIO's --certs-dir: public.crt and private.key, the certificate
	// naming 127.0.0.1); RootCAs is what the readiness check verifies it
	// against.
	CertsDir string
	RootCAs  *x509.CertPool
	// Host, if set, is the address the server listens on (default
	// 127.0.0.1); Command, if set, makes the server's command (a host of
	// its own: netnstest.Host.Command).
	Host    string
	Command func(name string, args ...string) *exec.Cmd
}

// Server is a running MinIO server.
type Server struct {
	Endpoint  string // host:port
	AccessKey string
	SecretKey string
	opts      Options
	cmd       *exec.Cmd
	dir       string
	exited    chan struct{}
}

// URL is the server's base URL: https:// with a CertsDir.
func (s *Server) URL() string {
	if s.opts.CertsDir != "" {
		return "https://" + s.Endpoint
	}
	return "http://" + s.Endpoint
}

// Pid is the id of the process started (with Options.Command, of the
// command it ran): a load test charges its CPU time to the origin.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Binary returns the path of the MinIO server binary.
func Binary() (string, error) {
	if p := os.Getenv("MINIO_BIN"); p != "" {
		return p, nil
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		out, err := exec.Command("go", "env", "GOPATH").Output()
		if err != nil {
			return "", fmt.Errorf("miniotest: go env GOPATH: %w", err)
		}
		gopath = strings.TrimSpace(string(out))
	}
	p := filepath.Join(strings.Split(gopath, string(os.PathListSeparator))[0], "bin", "minio")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("miniotest: no MinIO binary at %s (run `make deps`): %w", p, err)
	}
	return p, nil
}

// Start starts a server with a fresh data directory. Stop it with Stop.
func Start() (*Server, error) { return StartWith(Options{}) }

// StartWith is Start with o.
func StartWith(o Options) (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "granary-minio-")
	if err != nil {
		return nil, err
	}
	// A port picked by the kernel may be taken again before MinIO binds it;
	// retry a few times on a new one.
	for attempt := 0; attempt < 5; attempt++ {
		s, err := startOnce(bin, dir, o)
		if err == nil {
			return s, nil
		}
		if attempt == 4 {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	return nil, errors.New("unreachable")
}

func startOnce(bin, dir string, o Options) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	host, command := o.Host, o.Command
	if host == "" {
		host = "127.0.0.1"
	}
	if command == nil {
		command = exec.Command
	}
	s := &Server{
		Endpoint:  net.JoinHostPort(host, strconv.Itoa(port)),
		AccessKey: "minioadmin-test",
		SecretKey: "minioadmin-test-secret",
		opts:      o,
		dir:       dir,
	}
	if err := s.start(bin, command); err != nil {
		return nil, err
	}
	return s, nil
}

// start runs the server's process on its address and data, and waits
// until it is ready.
func (s *Server) start(bin string, command func(name string, args ...string) *exec.Cmd) error {
	args := []string{"server", "--quiet", "--address", s.Endpoint, "--console-address", "127.0.0.1:0"}
	if s.opts.CertsDir != "" {
		args = append(args, "--certs-dir", s.opts.CertsDir)
	}
	s.exited = make(chan struct{})
	s.cmd = command(bin, append(args, filepath.Join(s.dir, "data"))...)
	s.cmd.Env = append(os.Environ(),
		"MINIO_ROOT_USER="+s.AccessKey, "MINIO_ROOT_PASSWORD="+s.SecretKey,
		"MINIO_BROWSER=off", "MINIO_UPDATE=off", "MINIO_API_REQUESTS_MAX=4096")
	logf, err := os.OpenFile(filepath.Join(s.dir, "minio.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	if err := s.cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	exited := s.exited
	go func() { s.cmd.Wait(); logf.Close(); close(exited) }()
	if err := s.awaitReady(30 * time.Second); err != nil {
		s.kill()
		log, _ := os.ReadFile(filepath.Join(s.dir, "minio.log"))
		return fmt.Errorf("miniotest: %w; log:\n%s", err, log)
	}
	return nil
}

// Kill kills the server's process as a crash would, keeping its address
// and data for Restart.
func (s *Server) Kill() { s.kill() }

// Restart starts a killed server again, on its address and with its
// data, and waits until it is ready.
func (s *Server) Restart() error {
	bin, err := Binary()
	if err != nil {
		return err
	}
	command := s.opts.Command
	if command == nil {
		command = exec.Command
	}
	return s.start(bin, command)
}

// awaitReady polls MinIO's health endpoints until both answer 200, the
// process exits, or the deadline passes: ready (it serves HTTP) comes
// before cluster (its object layer is up), and an S3 call between the
// two fails with XMinioServerNotInitialized.
func (s *Server) awaitReady(limit time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: s.opts.RootCAs}}
	defer tr.CloseIdleConnections()
	healthy := func(path string) bool {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL()+path, nil)
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	for {
		if healthy("/minio/health/ready") && healthy("/minio/health/cluster") {
			return nil
		}
		select {
		case <-s.exited:
			return errors.New("minio exited during start")
		case <-ctx.Done():
			return fmt.Errorf("minio not ready after %v", limit)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (s *Server) kill() {
	if s.cmd.Process != nil {
		s.cmd.Process.Kill()
		<-s.exited
	}
}

// Stop kills the server and removes its data.
func (s *Server) Stop() {
	s.kill()
	os.RemoveAll(s.dir)
}

// Main is a package's TestMain over one MinIO: it starts it, sets *srv,
// runs the tests, stops it and exits with the tests' code.
func Main(m *testing.M, srv **Server) {
	s, err := Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*srv = s
	code := m.Run()
	s.Stop()
	os.Exit(code)
}

// StartT starts a server for one test and stops it when the test ends.
func StartT(t testing.TB) *Server {
	t.Helper()
	return StartTWith(t, Options{})
}

// StartTWith is StartT with o.
func StartTWith(t testing.TB, o Options) *Server {
	t.Helper()
	s, err := StartWith(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
