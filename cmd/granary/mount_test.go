// Tests of `granary mount` as a person runs it: usage errors in-process;
// real kernel mounts (as child processes: the test binary re-executes
// itself, see TestMain) of a real MinIO and of a real `granary serve`,
// read back and compared by sha256; SIGTERM, an unmount by hand, wrong
// credentials; and --supervise with its worker killed.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/spf13/pflag"

	"github.com/granary-dev/granary/fuse"
	"github.com/granary-dev/granary/internal/miniotest"
	"github.com/granary-dev/granary/internal/syncbuf"
)

// testWorkerCommand runs a supervisor's worker as the test binary, which
// TestMain turns into `execute(args)`.
func testWorkerCommand(args []string) (*exec.Cmd, error) {
	argv, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	// The last value of a variable wins: this replaces the supervisor's own.
	cmd.Env = append(os.Environ(), childArgsEnv+"="+string(argv))
	return cmd, nil
}

var mountCreds = map[string]string{"GRANARY_ACCESS_KEY": "mount-access", "GRANARY_SECRET_KEY": "mount-secret"}

func TestMountUsageErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"mount"}, mountCreds, "want BUCKET MOUNTPOINT, got 0"},
		{[]string{"mount", "b"}, mountCreds, "want BUCKET MOUNTPOINT, got 1"},
		{[]string{"mount", "b", dir, "extra"}, mountCreds, "got 3"},
		{[]string{"mount", "--no-such-flag", "b", dir}, mountCreds, "no-such-flag"},
		{[]string{"mount", "--file-mode", "0999", "b", dir}, mountCreds, "invalid mode"},
		{[]string{"mount", "--dir-mode", "01777", "b", dir}, mountCreds, "from 0 to 0777"},
		{[]string{"mount", "--uid", "-5", "b", dir}, mountCreds, "invalid ID"},
		{[]string{"mount", "--gid", "4294967295", "b", dir}, mountCreds, "invalid ID"},
		{[]string{"mount", "--max-memory", "12 parsecs", "b", dir}, mountCreds, "invalid size"},
		{[]string{"mount", "--max-memory", "1KiB", "b", dir}, mountCreds, "want at least 4MiB"},
		{[]string{"mount", "--metadata-ttl", "0s", "b", dir}, mountCreds, "positive duration"},
		{[]string{"mount", "--metadata-ttl", "soon", "b", dir}, mountCreds, "metadata-ttl"},
		{[]string{"mount", "--endpoint", "localhost:9000", "b", dir}, mountCreds, "http://HOST:PORT"},
		{[]string{"mount", "b", dir}, nil, "set GRANARY_ACCESS_KEY and GRANARY_SECRET_KEY"},
		{[]string{"mount", "b", filepath.Join(dir, "missing")}, mountCreds, "want an existing directory"},
		{[]string{"mount", "b", file}, mountCreds, "not a directory"},
		{[]string{"mount", "--supervise", "b", file}, mountCreds, "not a directory"},
		{[]string{"mount", "", dir}, mountCreds, "empty BUCKET"},
	}
	for _, tc := range cases {
		var out bytes.Buffer
		code := execute(context.Background(), tc.args, &out, &out, envMap(tc.env))
		if code != exitUsage || !strings.Contains(out.String(), tc.want) {
			t.Errorf("%q: exit %d, want %d; output lacks %q:\n%s", tc.args, code, exitUsage, tc.want, out.String())
		}
	}
}

func TestMountHelpExplainsEveryFlag(t *testing.T) {
	var out bytes.Buffer
	if code := execute(context.Background(), []string{"mount", "--help"}, &out, &out, envMap(nil)); code != exitOK {
		t.Fatalf("exit %d:\n%s", code, out.String())
	}
	for _, want := range []string{"--endpoint", "--prefix", "--read-only", "--uid", "--gid", "--file-mode", "--dir-mode",
		"--metadata-ttl", "--max-memory", "--debug", "--supervise", "GRANARY_ACCESS_KEY", "GRANARY_SECRET_KEY",
		"GRANARY_REGION", "--stage-dir", "uploaded when it is closed", "SIGTERM", "--ca-file", "GRANARY_CA_FILE"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("mount --help lacks %q", want)
		}
	}
	if strings.Contains(out.String(), "ready-fd") {
		t.Errorf("mount --help shows the internal --ready-fd")
	}
}

// TestMountOptions checks flags and environment become the fuse options,
// and that a supervisor hands its worker the same options.
func TestMountOptions(t *testing.T) {
	dir := t.TempDir()
	certs := newTLSFiles(t)
	env := envMap(map[string]string{"GRANARY_ACCESS_KEY": "AK", "GRANARY_SECRET_KEY": "SK", "GRANARY_REGION": "eu-west-1"})
	f := defaultMountFlags()
	fs := pflag.NewFlagSet("mount", pflag.ContinueOnError)
	f.register(fs)
	err := fs.Parse([]string{"--endpoint", "http://10.1.2.3:9000/", "--ca-file", certs.ca.File, "--prefix", "a b/c", "--read-only", "--stage-dir", "/var/tmp", "--uid", "1000",
		"--gid", "0", "--file-mode", "0440", "--dir-mode", "750", "--metadata-ttl", "1m", "--max-memory", "1.5GiB",
		"--debug", "--supervise", "bucket", dir})
	if err != nil {
		t.Fatal(err)
	}
	opts, gotDir, err := f.options(env, "bucket", dir)
	if err != nil {
		t.Fatal(err)
	}
	want := fuse.Options{Endpoint: "http://10.1.2.3:9000", AccessKey: "AK", SecretKey: "SK", Region: "eu-west-1",
		Bucket: "bucket", Prefix: "a b/c", ReadOnly: true, StageDir: "/var/tmp", UID: 1000, GID: 0, FileMode: 0o440, DirMode: 0o750,
		MetadataTTL: time.Minute, MaxMemory: 3 << 29, Debug: true}
	if !verifies(t, opts.RootCAs, certs.cert) {
		t.Fatal("options: RootCAs does not hold the --ca-file's CA")
	}
	opts.RootCAs = nil // checked: DeepEqual cannot compare pools
	if !reflect.DeepEqual(opts, want) || gotDir != dir {
		t.Fatalf("options:\n got %+v %s\nwant %+v %s", opts, gotDir, want, dir)
	}
	// The worker's command line: the same options, no --supervise.
	wargs := workerArgs(fs, "bucket", dir)
	if wargs[0] != "mount" || strings.Contains(strings.Join(wargs, " "), "supervise") {
		t.Fatalf("worker args %q", wargs)
	}
	wf := defaultMountFlags()
	wfs := pflag.NewFlagSet("mount", pflag.ContinueOnError)
	wf.register(wfs)
	if err := wfs.Parse(wargs[1:]); err != nil {
		t.Fatalf("worker args %q: %v", wargs, err)
	}
	wopts, wdir, err := wf.options(env, wfs.Arg(0), wfs.Arg(1))
	if err != nil || wf.supervise || wf.readyFD != workerReadyFD || wfs.NArg() != 2 {
		t.Fatalf("worker args %q: supervise %v, ready fd %d, %v", wargs, wf.supervise, wf.readyFD, err)
	}
	if !verifies(t, wopts.RootCAs, certs.cert) {
		t.Fatal("worker options: RootCAs does not hold the --ca-file's CA")
	}
	wopts.RootCAs = nil
	if !reflect.DeepEqual(wopts, want) || wdir != dir {
		t.Fatalf("worker options:\n got %+v\nwant %+v", wopts, want)
	}
	// Defaults: the caller's IDs, 0644 and 0755.
	d := defaultMountFlags()
	opts, _, err = d.options(env, "bucket", dir)
	if err != nil || opts.UID != uint32(os.Getuid()) || opts.GID != uint32(os.Getgid()) ||
		opts.FileMode != 0o644 || opts.DirMode != 0o755 || opts.MetadataTTL != time.Minute || opts.MaxMemory != 256<<20 {
		t.Fatalf("defaults: %+v %v", opts, err)
	}
}

// needFUSE skips a test where the kernel offers no FUSE.
func needFUSE(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("no FUSE here: %v", err)
	}
}

// mountedRE matches the line a worker prints once mounted.
var mountedRE = regexp.MustCompile(`granary: mounted s3://\S* at \S+ \(endpoint \S+, pid (\d+)\)`)

// mountChild is a `granary mount` process (or a supervisor) at dir.
type mountChild struct {
	*child
	dir string
}

// spawnMount runs `granary mount args` with env as a child process. When
// the test ends it is stopped (SIGTERM, then SIGKILL) and any mount left
// at dir is removed.
func spawnMount(t *testing.T, env map[string]string, dir string, args ...string) *mountChild {
	t.Helper()
	return spawnMountAs(t, os.Args[0], nil, env, dir, args...)
}

// spawnMountAs is spawnMount running bin (a copy of the test binary) as
// the user of cred (nil: this process's).
func spawnMountAs(t *testing.T, bin string, cred *syscall.Credential, env map[string]string, dir string, args ...string) *mountChild {
	t.Helper()
	argv, _ := json.Marshal(append([]string{"mount"}, args...))
	c := &child{cmd: exec.Command(bin, "-test.run=^$"), stderr: &syncbuf.Buffer{}, exited: make(chan struct{})}
	if cred != nil {
		c.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	c.cmd.Env = append(os.Environ(), childArgsEnv+"="+string(argv))
	for k, v := range env {
		c.cmd.Env = append(c.cmd.Env, k+"="+v)
	}
	c.cmd.Stderr = c.stderr
	t.Cleanup(func() {
		if err := cleanDeadMount(dir); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.cmd.Wait(); close(c.exited) }()
	t.Cleanup(func() {
		c.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.exited:
		case <-time.After(20 * time.Second):
			c.kill(t)
		}
	})
	return &mountChild{child: c, dir: dir}
}

// awaitMounted waits (bounded) for the n-th "mounted" line and returns the
// pid of the worker that printed it.
func (m *mountChild) awaitMounted(t *testing.T, n int) int {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		if all := mountedRE.FindAllStringSubmatch(m.stderr.String(), -1); len(all) >= n {
			pid, _ := strconv.Atoi(all[n-1][1])
			if ok, err := fuse.IsMounted(m.dir); !ok || err != nil {
				t.Fatalf("reported a mount, but %s is not a FUSE mount (%v)", m.dir, err)
			}
			return pid
		}
		select {
		case <-m.exited:
			t.Fatalf("mount exited early (%s):\n%s", m.cmd.ProcessState, m.stderr.String())
		case <-deadline:
			t.Fatalf("no mount after 30s:\n%s", m.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// awaitExit waits (bounded) for the process to exit with code, and checks
// nothing is left mounted at dir.
func (m *mountChild) awaitExit(t *testing.T, code int, within time.Duration) {
	t.Helper()
	select {
	case <-m.exited:
	case <-time.After(within):
		t.Fatalf("still running after %s:\n%s", within, m.stderr.String())
	}
	if got := m.cmd.ProcessState.ExitCode(); got != code {
		t.Fatalf("exit %d, want %d:\n%s", got, code, m.stderr.String())
	}
	if ok, err := fuse.IsMounted(m.dir); ok || err != nil {
		t.Fatalf("%s is still mounted after exit (%v)", m.dir, err)
	}
}

// readWithin reads a file through the mount, failing the test if that
// takes longer than d (a hung mount must not hang the test).
func readWithin(t *testing.T, path string, d time.Duration) ([]byte, error) {
	t.Helper()
	type result struct {
		b   []byte
		err error
	}
	ch := make(chan result, 1)
	go func() { b, err := os.ReadFile(path); ch <- result{b, err} }()
	select {
	case r := <-ch:
		return r.b, r.err
	case <-time.After(d):
		t.Fatalf("reading %s took more than %s", path, d)
		return nil, nil
	}
}

// seed creates bucket and puts objects of the given sizes (random bytes)
// under prefix; it returns their sha256 sums by key.
func seed(t *testing.T, cl *minio.Client, bucket, prefix string, sizes map[string]int) map[string][32]byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := cl.MakeBucket(ctx, bucket, minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	sums := map[string][32]byte{}
	for key, n := range sizes {
		b := make([]byte, n)
		rand.Read(b)
		if _, err := cl.PutObject(ctx, bucket, prefix+key, bytes.NewReader(b), int64(n), minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
		sums[key] = sha256.Sum256(b)
	}
	return sums
}

var seedSizes = map[string]int{"a.txt": 12, "empty": 0, "dir/b.bin": 3<<20 + 17, "dir/sub/c.txt": 4096}

// checkFiles reads every seeded file through the mount and compares sums.
func checkFiles(t *testing.T, dir string, sums map[string][32]byte) {
	t.Helper()
	readSums(t, dir, sums)
	ents, err := os.ReadDir(filepath.Join(dir, "dir"))
	if err != nil || len(ents) != 2 || ents[0].Name() != "b.bin" || !ents[1].IsDir() {
		t.Errorf("readdir dir: %v %v", ents, err)
	}
}

// minioEnv is the client environment for mio's root credentials.
func minioEnv(mio *miniotest.Server) map[string]string {
	return map[string]string{"GRANARY_ACCESS_KEY": mio.AccessKey, "GRANARY_SECRET_KEY": mio.SecretKey}
}

func TestMountMinIOReadAndStop(t *testing.T) {
	needFUSE(t)
	mio := miniotest.StartT(t)
	cl, err := newS3Client(mio.URL(), envMap(minioEnv(mio)))
	if err != nil {
		t.Fatal(err)
	}
	sums := seed(t, cl, "train", "", seedSizes)
	dir := t.TempDir()
	m := spawnMount(t, minioEnv(mio), dir, "--endpoint", mio.URL(), "train", dir)
	m.awaitMounted(t, 1)
	checkFiles(t, dir, sums)
	// A write lands at the origin once the file is closed.
	if err := os.WriteFile(filepath.Join(dir, "new.txt"), []byte("written"), 0o644); err != nil {
		t.Fatalf("write through the mount: %v", err)
	}
	if got := getAll(t, cl, "train", "new.txt"); string(got) != "written" {
		t.Errorf("the origin holds %q after the write", got)
	}
	m.cmd.Process.Signal(syscall.SIGTERM)
	m.awaitExit(t, exitOK, 20*time.Second)

	ro := t.TempDir()
	m = spawnMount(t, minioEnv(mio), ro, "--endpoint", mio.URL(), "--read-only", "train", ro)
	m.awaitMounted(t, 1)
	if err := os.WriteFile(filepath.Join(ro, "new2.txt"), []byte("x"), 0o644); !errors.Is(err, syscall.EROFS) {
		t.Errorf("a write on a --read-only mount: %v, want EROFS", err)
	}
	m.cmd.Process.Signal(syscall.SIGTERM)
	m.awaitExit(t, exitOK, 20*time.Second)
}

// TestMountThroughServe mounts a prefix of a bucket of a real `granary
// serve` node (over MinIO), then unmounts it by hand.
func TestMountThroughServe(t *testing.T) {
	needFUSE(t)
	node, clientEnv, cl := nodeForMount(t, "64MiB")
	sums := seed(t, cl, "data", "run-1/", seedSizes)
	dir := t.TempDir()
	m := spawnMount(t, clientEnv, dir, "--endpoint", "http://"+node.addr, "--prefix", "run-1", "data", dir)
	m.awaitMounted(t, 1)
	checkFiles(t, dir, sums)
	checkFiles(t, dir, sums) // again, from the node's cache and the kernel's
	if out, err := exec.Command("fusermount3", "-u", dir).CombinedOutput(); err != nil {
		t.Fatalf("fusermount3 -u: %v: %s", err, out)
	}
	m.awaitExit(t, exitOK, 20*time.Second)
}

// nodeForMount starts a node with ram in front of a MinIO of its own,
// and returns it, the client environment a mount of it takes and an S3
// client of it.
func nodeForMount(t *testing.T, ram string) (*child, map[string]string, *minio.Client) {
	t.Helper()
	mio := miniotest.StartT(t)
	env := map[string]string{
		"GRANARY_ACCESS_KEY": "mount-serve-access", "GRANARY_SECRET_KEY": "mount-serve-secret",
		"GRANARY_ORIGIN_ACCESS_KEY": mio.AccessKey, "GRANARY_ORIGIN_SECRET_KEY": mio.SecretKey,
		"GRANARY_DATA_DIR": t.TempDir(),
	}
	node := startChild(t, env, "--origin", "s3://"+mio.Endpoint+"?secure=false", "--ram", ram, "--disk", "0")
	clientEnv := map[string]string{"GRANARY_ACCESS_KEY": env["GRANARY_ACCESS_KEY"], "GRANARY_SECRET_KEY": env["GRANARY_SECRET_KEY"]}
	cl, err := newS3Client("http://"+node.addr, envMap(clientEnv))
	if err != nil {
		t.Fatal(err)
	}
	return node, clientEnv, cl
}

// TestMountFailsFast: wrong credentials and a missing bucket exit 1 at
// once with a clear error, and nothing is mounted.
func TestMountFailsFast(t *testing.T) {
	needFUSE(t)
	mio := miniotest.StartT(t)
	cl, err := newS3Client(mio.URL(), envMap(minioEnv(mio)))
	if err != nil {
		t.Fatal(err)
	}
	seed(t, cl, "exists", "", map[string]int{"f": 1})
	wrong := map[string]string{"GRANARY_ACCESS_KEY": mio.AccessKey, "GRANARY_SECRET_KEY": "not-the-secret"}
	for _, tc := range []struct {
		name   string
		env    map[string]string
		bucket string
		extra  []string
	}{
		{"wrong secret", wrong, "exists", nil},
		{"missing bucket", minioEnv(mio), "no-such-bucket", nil},
		{"wrong secret, supervised", wrong, "exists", []string{"--supervise"}},
	} {
		dir := t.TempDir()
		m := spawnMount(t, tc.env, dir, append(append([]string{"--endpoint", mio.URL()}, tc.extra...), tc.bucket, dir)...)
		m.awaitExit(t, exitFailure, 30*time.Second)
		out := m.stderr.String()
		if !strings.Contains(out, "granary: ") || strings.Contains(out, "granary: mounted") || strings.Contains(out, "not-the-secret") {
			t.Errorf("%s: unclear output:\n%s", tc.name, out)
		}
		if n := strings.Count(out, "started mount worker"); tc.extra != nil && n != 1 {
			t.Errorf("%s: the supervisor started %d workers, want 1:\n%s", tc.name, n, out)
		}
	}
}

// TestMountSuperviseRestartsKilledWorker kills the worker with SIGKILL and
// expects reads to work again within 5 seconds, then stops the supervisor.
func TestMountSuperviseRestartsKilledWorker(t *testing.T) {
	needFUSE(t)
	mio := miniotest.StartT(t)
	cl, err := newS3Client(mio.URL(), envMap(minioEnv(mio)))
	if err != nil {
		t.Fatal(err)
	}
	sums := seed(t, cl, "train", "", seedSizes)
	dir := t.TempDir()
	m := spawnMount(t, minioEnv(mio), dir, "--supervise", "--endpoint", mio.URL(), "train", dir)
	first := m.awaitMounted(t, 1)
	checkFiles(t, dir, sums)
	for round := 1; round <= 2; round++ { // the second restart is after a back-off
		if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
			t.Fatalf("kill worker %d: %v", first, err)
		}
		killed := time.Now()
		path := filepath.Join(dir, "dir/b.bin")
		for {
			b, err := readWithin(t, path, 5*time.Second)
			if err == nil && sha256.Sum256(b) == sums["dir/b.bin"] {
				break
			}
			if time.Since(killed) > 5*time.Second {
				t.Fatalf("round %d: no good read 5s after the worker was killed (last: %d bytes, %v):\n%s",
					round, len(b), err, m.stderr.String())
			}
			time.Sleep(20 * time.Millisecond) // polling the mount, not waiting for readiness
		}
		t.Logf("round %d: reads work again %s after the kill", round, time.Since(killed).Round(time.Millisecond))
		next := m.awaitMounted(t, round+1)
		if next == first {
			t.Fatalf("the worker pid did not change")
		}
		first = next
	}
	checkFiles(t, dir, sums)
	m.cmd.Process.Signal(syscall.SIGTERM)
	m.awaitExit(t, exitOK, 30*time.Second)
	if err := syscall.Kill(first, 0); err == nil {
		t.Errorf("worker %d still runs after the supervisor exited", first)
	}
}

// TestSupervisePolicy drives the supervisor with fake workers (sh scripts
// numbered $n by a counter file): the first failing before it mounts ends
// it; once a worker has mounted, failures are retried with a growing
// delay; a clean exit ends it; cancelling stops the worker with SIGTERM.
func TestSupervisePolicy(t *testing.T) {
	// run supervises script until the log shows workers starts, then
	// cancels (workers 0: until supervise returns by itself).
	run := func(script string, workers int) (string, error) {
		t.Helper()
		count := filepath.Join(t.TempDir(), "count")
		saved := workerCommand
		defer func() { workerCommand = saved }()
		workerCommand = func([]string) (*exec.Cmd, error) {
			return exec.Command("sh", "-c", "n=$(cat "+count+" 2>/dev/null || echo 0); echo $((n+1)) >"+count+"; "+script), nil
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var log syncbuf.Buffer
		done := make(chan error, 1)
		go func() { done <- supervise(ctx, nil, true, nil, t.TempDir(), &log) }()
		for deadline := time.After(20 * time.Second); workers == 0 || strings.Count(log.String(), "started mount worker") < workers; {
			select {
			case err := <-done:
				return log.String(), err
			case <-deadline:
				t.Fatalf("supervise did not return or start %d workers:\n%s", workers, log.String())
			case <-time.After(10 * time.Millisecond):
			}
		}
		cancel()
		select {
		case err := <-done:
			return log.String(), err
		case <-time.After(30 * time.Second):
			t.Fatalf("supervise did not stop:\n%s", log.String())
			return "", nil
		}
	}
	out, err := run("exit 1", 0)
	if err == nil || !strings.Contains(err.Error(), "failed before mounting") || strings.Count(out, "started") != 1 {
		t.Errorf("first worker fails: %v\n%s", err, out)
	}
	out, err = run("printf x >&3; exit 0", 0)
	if err != nil || !strings.Contains(out, "exited cleanly") || strings.Count(out, "started") != 1 {
		t.Errorf("worker exits 0: %v\n%s", err, out)
	}
	// Mounts and is killed; fails before mounting; mounts and is killed;
	// mounts and stays until the supervisor stops it.
	out, err = run("case $n in 0|2) printf x >&3; kill -9 $$;; 1) exit 1;; *) printf x >&3; exec sleep 60;; esac", 4)
	for _, want := range []string{"signal: killed) after", "restarting in 100ms", "exit status 1) after", "restarting in 200ms",
		"restarting in 400ms", "supervisor: stopped"} {
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("restarts: %v; log lacks %q:\n%s", err, want, out)
		}
	}
	if strings.Count(out, "started mount worker") != 4 || strings.Contains(out, "did not stop") {
		t.Errorf("restarts: want 4 workers, the last stopped by SIGTERM:\n%s", out)
	}
}
