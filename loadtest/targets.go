// The servers a load test measures: MinIO (internal/miniotest), a trivial
// in-memory Go HTTP server (the ceiling of a Go server on this machine),
// nginx proxy_cache in front of MinIO (nginx.go) and a `granary serve`
// process in front of MinIO. All on loopback.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/granary-dev/granary/internal/miniotest"
	"github.com/granary-dev/granary/internal/procmem"
)

// target is one server under measurement: where it is and how it is
// read, and what the reads report may say of it (lineup.go). Nothing
// measures a target by its name; the name labels its rows.
type target struct {
	name      string // the report's label, e.g. "minio", "nginx", or an -endpoint's URL
	endpoint  string // http://host:port, or https://
	access    string
	secret    string
	region    string // what requests are signed for; "" is us-east-1
	anonymous bool   // unsigned GETs (nginx: a public-read bucket)
	// route asks a cluster member to redirect each GET to the owner of
	// the chunk it starts in (X-Granary-Route: owner); the client follows
	// such a redirect once, signed for the owner.
	route bool
	roots *x509.CertPool // what an https endpoint is verified against
	// procs and origin are the target's own processes and, for a cache,
	// its origin's, whose CPU time the reads scenario charges per GET
	// (reads_cpu.go); nil where there are none apart from the client.
	procs, origin procSet
	targetKind
}

// trivialServer serves objects from memory by path (/bucket/key), whole or
// one "bytes=a-b" range. It ignores authentication and does nothing else,
// which makes it the upper bound of a Go HTTP server here.
type trivialServer struct {
	objects map[string][]byte // "/bucket/key" -> bytes; read-only once serving
	srv     *http.Server
	ln      net.Listener
	scheme  string
}

func startTrivial(d *dataset) (*trivialServer, error) { return startTrivialTLS(d, nil) }

// startTrivialTLS starts a trivial server serving HTTPS with cert, or
// HTTP when cert is nil: crypto/tls as net/http uses it, the ceiling of a
// Go HTTPS server here.
func startTrivialTLS(d *dataset, cert *tls.Certificate) (*trivialServer, error) {
	t := &trivialServer{objects: make(map[string][]byte), scheme: "http"}
	for _, o := range d.all() {
		t.objects["/"+d.bucket+"/"+o.key] = o.data
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	if cert != nil {
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{*cert}})
		t.scheme = "https"
	}
	t.ln = ln
	t.srv = &http.Server{Handler: t, ReadHeaderTimeout: 10 * time.Second}
	go t.srv.Serve(ln)
	return t, nil
}

func (t *trivialServer) endpoint() string { return t.scheme + "://" + t.ln.Addr().String() }

func (t *trivialServer) close() { t.srv.Close() }

func (t *trivialServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	data, ok := t.objects[r.URL.Path]
	if !ok || r.Method != http.MethodGet {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	rng := r.Header.Get("Range")
	if rng == "" {
		h.Set("Content-Length", strconv.Itoa(len(data)))
		w.Write(data)
		return
	}
	start, end, ok := parseRange(rng, int64(len(data)))
	if !ok {
		w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
		return
	}
	h.Set("Content-Length", strconv.FormatInt(end-start+1, 10))
	h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, end, len(data)))
	w.WriteHeader(http.StatusPartialContent)
	w.Write(data[start : end+1])
}

// parseRange parses the one form the load client sends, "bytes=a-b".
func parseRange(s string, size int64) (start, end int64, ok bool) {
	a, b, found := strings.Cut(strings.TrimPrefix(s, "bytes="), "-")
	start, err1 := strconv.ParseInt(a, 10, 64)
	end, err2 := strconv.ParseInt(b, 10, 64)
	if !found || err1 != nil || err2 != nil || start < 0 || start > end || start >= size {
		return 0, 0, false
	}
	return start, min(end, size-1), true
}

// granaryProc is a running `granary serve`.
type granaryProc struct {
	cmd    *exec.Cmd
	dir    string
	addr   string
	exited chan struct{}
	log    *os.File
	// roots, set for a node serving HTTPS, verify its certificate; http
	// asks its own routes (/healthz, /metrics) over the right scheme.
	roots *x509.CertPool
	http  *http.Client
}

// Credentials the load test gives the granary node.
const (
	granaryAccess = "loadtest-access"
	granarySecret = "loadtest-secret-0123456789"
)

// startGranary starts bin in front of the MinIO at minioEndpoint (host:port)
// with ram as its RAM budget, a disk tier in a temporary directory and the
// extra serve flags, and waits until its /healthz answers.
func startGranary(bin, minioEndpoint, minioAccess, minioSecret string, ram, disk int64, extra ...string) (*granaryProc, error) {
	return startGranaryWith(nil, bin, minioEndpoint, minioAccess, minioSecret, ram, disk, extra...)
}

// startGranaryWith is startGranary for a node serving HTTPS when roots is
// set: extra then names its pair (--tls-cert, --tls-key), which a CA in
// roots signed.
func startGranaryWith(roots *x509.CertPool, bin, minioEndpoint, minioAccess, minioSecret string, ram, disk int64, extra ...string) (*granaryProc, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	args, env := originFlags(minioEndpoint, minioAccess, minioSecret, ram, disk)
	g, err := launchGranary(bin, "granary-loadtest-", fmt.Sprintf("127.0.0.1:%d", port), append(args, extra...), env, pins.node(0))
	if err != nil {
		return nil, err
	}
	if roots != nil {
		g.roots = roots
		g.http = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	}
	if err := g.awaitReady(60 * time.Second); err != nil {
		g.stop()
		return nil, err
	}
	return g, nil
}

// originPayload is -origin-payload: how nodes send their uploads to
// MinIO (the origin URL's payload=; empty: the node's default).
var originPayload string

// originFlags are the serve flags and the extra environment of a node in
// front of the S3 origin at origin (host:port, credentials access/secret)
// with budget ram and disk.
func originFlags(origin, access, secret string, ram, disk int64) (args, env []string) {
	url := "s3://" + origin + "?secure=false&region=us-east-1"
	if originPayload != "" {
		url += "&payload=" + originPayload
	}
	args = []string{"--origin", url,
		"--ram", strconv.FormatInt(ram, 10), "--disk", strconv.FormatInt(disk, 10), "--log-level", "warn"}
	env = []string{"GRANARY_ORIGIN_ACCESS_KEY=" + access, "GRANARY_ORIGIN_SECRET_KEY=" + secret}
	return args, env
}

// startMinio starts a MinIO on the layout's origin cores.
func startMinio() (*miniotest.Server, error) {
	var mio *miniotest.Server
	err := startOn(pins.origin, func() (err error) {
		mio, err = miniotest.Start()
		return err
	})
	return mio, err
}

// launchGranary starts `bin serve` on addr with a fresh data directory (a
// temporary directory named after dirPrefix, which stop removes), the
// load test's credentials, args and extra environment, on cores (nil:
// any), without waiting for it.
func launchGranary(bin, dirPrefix, addr string, args, env []string, cores coreSet) (*granaryProc, error) {
	dir, err := os.MkdirTemp("", dirPrefix)
	if err != nil {
		return nil, err
	}
	g := &granaryProc{dir: dir, addr: addr, exited: make(chan struct{}), http: http.DefaultClient}
	g.cmd = exec.Command(bin, append([]string{"serve", "--listen", addr, "--data-dir", filepath.Join(dir, "data")}, args...)...)
	g.cmd.Env = append(append(os.Environ(), "GRANARY_ACCESS_KEY="+granaryAccess, "GRANARY_SECRET_KEY="+granarySecret), env...)
	if g.log, err = os.Create(filepath.Join(dir, "granary.log")); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	g.cmd.Stdout, g.cmd.Stderr = g.log, g.log
	if err := startCmdOn(cores, g.cmd); err != nil {
		g.log.Close()
		os.RemoveAll(dir)
		return nil, err
	}
	go func() { g.cmd.Wait(); close(g.exited) }()
	return g, nil
}

func (g *granaryProc) endpoint() string {
	if g.roots != nil {
		return "https://" + g.addr
	}
	return "http://" + g.addr
}

// awaitReady polls /healthz until it answers 200, the process exits, or
// limit passes.
func (g *granaryProc) awaitReady(limit time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, g.endpoint()+"/healthz", nil)
		if resp, err := g.http.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-g.exited:
			return fmt.Errorf("granary exited during start:\n%s", g.tail())
		case <-ctx.Done():
			return fmt.Errorf("granary not ready after %v:\n%s", limit, g.tail())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// tail returns the end of the node's log.
func (g *granaryProc) tail() string {
	b, _ := os.ReadFile(g.log.Name())
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// peakRSS returns the process's peak resident set (VmHWM) in bytes, plus
// the pages its memory files hold now (the RAM tier's arena, which RSS
// shows only where it is mapped): an upper bound.
func (g *granaryProc) peakRSS() (int64, error) {
	pid := g.cmd.Process.Pid
	files, err := procmem.MemfdBytes(pid)
	if err != nil {
		return 0, err
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb<<10 + files, err
		}
	}
	return 0, errors.New("no VmHWM in /proc status")
}

// stop asks the node to shut down (SIGTERM), kills it after 20 s, and
// removes its directory.
func (g *granaryProc) stop() {
	g.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-g.exited:
	case <-time.After(20 * time.Second):
		g.cmd.Process.Kill()
		<-g.exited
	}
	g.log.Close()
	if g.roots != nil { // its own client; the default one is shared
		g.http.CloseIdleConnections()
	}
	os.RemoveAll(g.dir)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// awaitIdle waits (polling /metrics, at most limit) until the node runs no
// background cache fill, and returns how long that took.
func (g *granaryProc) awaitIdle(ctx context.Context, limit time.Duration) (time.Duration, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, g.endpoint()+"/metrics", nil)
		if resp, err := g.http.Do(req); err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(body), "\ngranary_cache_fills_running 0\n") {
				return time.Since(start), nil
			}
		}
		select {
		case <-ctx.Done():
			return time.Since(start), fmt.Errorf("granary still filling its cache after %v", limit)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// anonymousConfig writes a node configuration that makes bucket
// anonymous-read and returns its path (the caller removes it).
func anonymousConfig(bucket string) (string, error) {
	f, err := os.CreateTemp("", "granary-anonymous-*.yaml")
	if err != nil {
		return "", err
	}
	_, err = fmt.Fprintf(f, "buckets:\n  %s:\n    anonymous-read: true\n", bucket)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// nginxEpochs starts nginx with an empty cache in front of the uncapped
// link, reads the epochs through it anonymously (minio-go without
// credentials, from the public-read bucket) and stops it. Its hit rate
// is nginx's own X-Cache-Status over the epoch's answers.
func (r *epochsRun) nginxEpochs(ctx context.Context) error {
	n, err := startNginx(nginxOptions{upstream: r.fast.Addr(), objects: r.plan.files, bytes: r.plan.dataBytes()})
	if err != nil {
		return err
	}
	defer n.stop()
	cl, tr, sc, err := newCountingS3Client(n.addr, "", "")
	if err != nil {
		return err
	}
	defer tr.CloseIdleConnections()
	for e := 1; e <= r.plan.epochs; e++ {
		h0, o0 := sc.cacheSnapshot()
		row, err := r.epoch(ctx, cl, sc, e)
		if err != nil {
			return fmt.Errorf("epoch %d: %w\nnginx log tail:\n%s", e, err, n.tail())
		}
		h1, o1 := sc.cacheSnapshot()
		row.config, row.link = cfgNginx, linkUncapped
		row.cache = cacheCounts{hits: float64(h1 - h0), misses: float64(o1 - o0)}
		r.add(row)
	}
	return nil
}
