// nginx proxy_cache as a reference target: the cache an operator would put
// in front of an object store without Granary, measured in the same run.
// Debian's nginx runs as a non-daemon child process with its own prefix
// directory (configuration, pid, logs, temporary files) and its cache on
// tmpfs; reads through it are anonymous GETs of a public-read bucket, and
// writes pass through to the origin unchanged (signed by the client for
// the origin, which sees the Host header the client signed).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"text/template"
	"time"

	"github.com/minio/minio-go/v7"
)

// cacheStatusHeader is the header nginx adds with $upstream_cache_status
// (HIT, MISS, EXPIRED, ...).
const cacheStatusHeader = "X-Cache-Status"

// countCacheStatus adds an answer with headers h to hits (X-Cache-Status:
// HIT) or others (any other cache status); one without the header to
// neither.
func countCacheStatus(h http.Header, hits, others *atomic.Int64) {
	switch h.Get(cacheStatusHeader) {
	case "":
	case "HIT":
		hits.Add(1)
	default:
		others.Add(1)
	}
}

// nginxOptions shape one nginx reference.
type nginxOptions struct {
	upstream string // host:port of the origin (MinIO or the slow proxy in front of it)
	objects  int    // objects the cache must index (sizes keys_zone)
	bytes    int64  // bytes the cache must hold (sizes max_size)
	// certFile and keyFile, if set, make nginx serve HTTPS (TLS 1.2 and
	// 1.3, OpenSSL's default ciphers) with that pair.
	certFile, keyFile string
}

// nginxProc is a running nginx.
type nginxProc struct {
	cmd    *exec.Cmd
	dir    string // prefix: nginx.conf, pid, error log, temporary paths
	cache  string // proxy_cache_path, under /dev/shm
	addr   string // 127.0.0.1:port
	https  bool
	exited chan struct{}
	log    *os.File
}

// nginxBinary finds nginx on PATH or where Debian installs it.
func nginxBinary() (string, error) {
	if p, err := exec.LookPath("nginx"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/sbin/nginx"); err == nil {
		return "/usr/sbin/nginx", nil
	}
	return "", errors.New("nginx is not installed: the nginx proxy_cache reference target needs it (`make bench-deps` installs it)")
}

// startNginx starts nginx as a caching proxy of o.upstream and waits
// until its port answers.
func startNginx(o nginxOptions) (*nginxProc, error) {
	return launchNginx(o.certFile != "", pins.node(0), func(n *nginxProc) error { return n.prepare(o) })
}

// launchNginx starts nginx on cores (none: any) and a free port (its
// addr), with the prefix and configuration prepare makes, and waits
// until that port answers.
func launchNginx(https bool, cores coreSet, prepare func(*nginxProc) error) (*nginxProc, error) {
	bin, err := nginxBinary()
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	n := &nginxProc{addr: fmt.Sprintf("127.0.0.1:%d", port), https: https, exited: make(chan struct{})}
	if err := prepare(n); err != nil {
		n.cleanup()
		return nil, err
	}
	n.cmd = exec.Command(bin, "-p", n.dir+"/", "-c", filepath.Join(n.dir, "nginx.conf"), "-g", "daemon off;")
	n.cmd.Stdout, n.cmd.Stderr = n.log, n.log
	// Its own process group: a stop that times out kills the workers too.
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := startCmdOn(cores, n.cmd); err != nil {
		n.cleanup()
		return nil, err
	}
	go func() { n.cmd.Wait(); close(n.exited) }()
	if err := n.awaitReady(30 * time.Second); err != nil {
		n.stop()
		return nil, err
	}
	return n, nil
}

// prepare makes the prefix and cache directories and writes nginx.conf.
func (n *nginxProc) prepare(o nginxOptions) error {
	if err := n.makeDirs(); err != nil {
		return err
	}
	return n.writeConf(nginxConf, confData(o, n))
}

// makeDirs makes the prefix directory, with nginx's output log, and a
// directory on tmpfs (cache), both removed by cleanup.
func (n *nginxProc) makeDirs() error {
	var err error
	if n.dir, err = os.MkdirTemp("", "granary-nginx-"); err != nil {
		return err
	}
	if n.log, err = os.Create(filepath.Join(n.dir, "nginx.log")); err != nil {
		return err
	}
	if n.cache, err = os.MkdirTemp("/dev/shm", "granary-nginx-cache-"); err != nil {
		return fmt.Errorf("nginx cache on tmpfs: %w", err)
	}
	return nil
}

// writeConf writes nginx.conf from conf and its data.
func (n *nginxProc) writeConf(conf *template.Template, data any) error {
	f, err := os.Create(filepath.Join(n.dir, "nginx.conf"))
	if err != nil {
		return err
	}
	if err := conf.Execute(f, data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// confData fills nginxConf's template for o.
func confData(o nginxOptions, n *nginxProc) map[string]any {
	// keys_zone: about 8,000 keys per MiB; twice the objects, 16 MiB at
	// least. max_size: the data set with a quarter to spare, 256 MiB at
	// least, so nothing the scenario reads is ever evicted.
	// open_file_cache keeps cached objects' files open, as a tuned nginx
	// does: a hit then costs no open(2) (see openFiles).
	zoneMiB := max(16, 2*o.objects/8000+1)
	return map[string]any{
		"OpenFiles": openFiles(o.objects), "NoFile": noFileLimit(), "Conns": workerConnections,
		"Root": os.Geteuid() == 0, "Dir": n.dir, "Cache": n.cache, "Addr": n.addr, "Upstream": o.upstream,
		"ZoneMiB": zoneMiB, "MaxSize": max(256<<20, o.bytes+o.bytes/4), "Workers": nginxWorkers(pins.node(0)),
		"Cert": o.certFile, "Key": o.keyFile,
	}
}

// nginxWorkers is nginx's worker_processes on cores: a worker per core
// it may run on (pinned, its cores; else "auto", every core).
func nginxWorkers(cores coreSet) string {
	if s := cores; len(s) > 0 {
		return strconv.Itoa(len(s))
	}
	return "auto"
}

// workerConnections is nginx's worker_connections.
const workerConnections = 4096

// noFileLimit is the open files a worker may have: this process's hard
// limit (nginx may raise its own soft limit that far, not further).
func noFileLimit() int {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil || l.Max > 1<<20 {
		return 1 << 20
	}
	return int(l.Max)
}

// openFiles is open_file_cache's size: twice the objects, within what a
// worker's limit leaves beside its connections and their upstream ones
// (each worker caches its own descriptors). Past it nginx opens a file
// per hit again, as it would on such a host.
func openFiles(objects int) int {
	return max(256, min(2*objects, noFileLimit()-2*workerConnections-1024))
}

// nginxHead begins every nginx configuration here: the process settings
// and the http block's common directives, kept client connections and
// temporary paths under the prefix (the compiled-in ones are system
// directories). The http block stays open.
const nginxHead = `{{if .Root}}user root;
{{end}}worker_processes {{.Workers}};
worker_rlimit_nofile {{.NoFile}};
pid {{.Dir}}/nginx.pid;
error_log {{.Dir}}/error.log warn;
events { worker_connections {{.Conns}}; }
http {
	access_log off;
	sendfile on;
	tcp_nodelay on;
	keepalive_timeout 75s;
	keepalive_requests 1000000;
	client_body_temp_path {{.Dir}}/client_body;
	proxy_temp_path {{.Dir}}/proxy;
	fastcgi_temp_path {{.Dir}}/fastcgi;
	uwsgi_temp_path {{.Dir}}/uwsgi;
	scgi_temp_path {{.Dir}}/scgi;
`

// nginxConf is the reference configuration. Workers run as the current
// user; as root, nginx would switch them to nobody, who cannot write the
// cache, so root keeps them as root. use_temp_path=off writes a
// response being cached straight into the cache directory (tmpfs).
// Caching strips Range and conditional headers from the request to the
// origin, fetches the whole object and serves ranges from it
// (proxy_force_ranges also on a miss); proxy_cache_lock collapses
// concurrent misses of one object into one origin read, as granary does,
// with lock timeouts long enough for the largest object here.
// tcp_nopush stays off: with it, cache hits on kept-alive connections
// stalled for the peer's delayed ACK (about 40 ms each; 500 GETs/s of
// 100 KiB instead of 30,000 here).
var nginxConf = template.Must(template.New("nginx.conf").Parse(nginxHead + `	open_file_cache max={{.OpenFiles}} inactive=1h;
	open_file_cache_valid 1h;
	proxy_cache_path {{.Cache}} levels=1:2 keys_zone=reference:{{.ZoneMiB}}m max_size={{.MaxSize}} inactive=1d use_temp_path=off;
	upstream origin {
		server {{.Upstream}};
		keepalive 128;
	}
	server {
		listen {{.Addr}} backlog=4096{{if .Cert}} ssl{{end}};
{{- if .Cert}}
		ssl_certificate {{.Cert}};
		ssl_certificate_key {{.Key}};
		ssl_protocols TLSv1.2 TLSv1.3;
{{- end}}
		location / {
			proxy_pass http://origin;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
			proxy_set_header Host $http_host;
			proxy_buffering on;
			proxy_request_buffering off;
			client_max_body_size 0;
			proxy_read_timeout 10m;
			proxy_send_timeout 10m;
			proxy_cache reference;
			proxy_cache_valid 200 206 1h;
			proxy_cache_lock on;
			proxy_cache_lock_timeout 10m;
			proxy_cache_lock_age 10m;
			proxy_force_ranges on;
			add_header X-Cache-Status $upstream_cache_status;
		}
	}
}
`))

func (n *nginxProc) endpoint() string {
	if n.https {
		return "https://" + n.addr
	}
	return "http://" + n.addr
}

// awaitReady dials the port until it answers, nginx exits, or limit
// passes.
func (n *nginxProc) awaitReady(limit time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	var d net.Dialer
	for {
		if c, err := d.DialContext(ctx, "tcp", n.addr); err == nil {
			c.Close()
			return nil
		}
		select {
		case <-n.exited:
			return fmt.Errorf("nginx exited during start:\n%s", n.tail())
		case <-ctx.Done():
			return fmt.Errorf("nginx not ready after %v:\n%s", limit, n.tail())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// tail returns the end of nginx's output and error log.
func (n *nginxProc) tail() string {
	var b []byte
	for _, name := range []string{"nginx.log", "error.log"} {
		data, _ := os.ReadFile(filepath.Join(n.dir, name))
		b = append(b, data...)
	}
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// stop asks nginx to shut down gracefully (SIGQUIT), then fast
// (SIGTERM) after 10 s, kills its process group after 10 s more, and
// removes its directories.
func (n *nginxProc) stop() {
	if n.cmd != nil && n.cmd.Process != nil {
		pid := n.cmd.Process.Pid
		n.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-n.exited:
		case <-time.After(10 * time.Second):
			n.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-n.exited:
			case <-time.After(10 * time.Second):
				syscall.Kill(-pid, syscall.SIGKILL)
				<-n.exited
			}
		}
	}
	n.cleanup()
}

func (n *nginxProc) cleanup() {
	if n.log != nil {
		n.log.Close()
	}
	if n.cache != "" {
		os.RemoveAll(n.cache)
	}
	if n.dir != "" {
		os.RemoveAll(n.dir)
	}
}

// makePublicRead lets anyone GET the objects of bucket, as nginx's
// anonymous reads need.
func makePublicRead(ctx context.Context, cl *minio.Client, bucket string) error {
	policy, err := json.Marshal(map[string]any{
		"Version": "2012-10-17",
		"Statement": []map[string]any{{
			"Effect": "Allow", "Principal": map[string]any{"AWS": []string{"*"}},
			"Action": []string{"s3:GetObject"}, "Resource": []string{"arn:aws:s3:::" + bucket + "/*"},
		}},
	})
	if err != nil {
		return err
	}
	if err := cl.SetBucketPolicy(ctx, bucket, string(policy)); err != nil {
		return fmt.Errorf("public-read policy on %s: %w", bucket, err)
	}
	return nil
}
