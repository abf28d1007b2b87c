// Tests of a supervised mount's worker crash, as a trainer sees it: the
// real kernel FUSE, a real MinIO, the worker killed with SIGKILL, and
// descriptors, directory streams and working directories opened before
// the kill used after it.
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"golang.org/x/sys/unix"

	"github.com/granary-dev/granary/internal/miniotest"
	"github.com/granary-dev/granary/internal/slowproxy"
	"github.com/granary-dev/granary/internal/syncbuf"
)

// sessionMount seeds bucket train with sizes and mounts it supervised
// (extra flags first); it returns the mount and the objects' sums.
func sessionMount(t *testing.T, sizes map[string]int, extra ...string) (*mountChild, *minio.Client, map[string][32]byte) {
	t.Helper()
	mio, cl, sums := sessionOrigin(t, sizes)
	dir := t.TempDir()
	args := append(extra, "--supervise", "--endpoint", mio.URL(), "train", dir)
	m := spawnMount(t, minioEnv(mio), dir, args...)
	m.awaitMounted(t, 1)
	return m, cl, sums
}

// sessionOrigin skips a test where the kernel has no FUSE, and starts a
// MinIO with bucket train seeded with sizes. The session tests run as
// root, as the other mount tests do (and as CI runs them): they mount
// directly, or as another user.
func sessionOrigin(t *testing.T, sizes map[string]int) (*miniotest.Server, *minio.Client, map[string][32]byte) {
	t.Helper()
	needFUSE(t)
	if os.Geteuid() != 0 {
		t.Fatal("the session tests run as root")
	}
	mio := miniotest.StartT(t)
	cl, err := newS3Client(mio.URL(), envMap(minioEnv(mio)))
	if err != nil {
		t.Fatal(err)
	}
	return mio, cl, seed(t, cl, "train", "", sizes)
}

// restart kills the n-th worker with SIGKILL and waits (bounded) for the
// next one to report its mount.
func (m *mountChild) restart(t *testing.T, n int) {
	t.Helper()
	pid := m.awaitMounted(t, n)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill worker %d: %v", pid, err)
	}
	if next := m.awaitMounted(t, n+1); next == pid {
		t.Fatalf("worker %d was not replaced", pid)
	}
}

// boundedBy runs f, failing the test if it takes longer than d: a request
// lost with a dead worker must not hang the test.
func boundedBy(t *testing.T, d time.Duration, what string, f func() error) error {
	t.Helper()
	ch := make(chan error, 1)
	go func() { ch <- f() }()
	select {
	case err := <-ch:
		return err
	case <-time.After(d):
		t.Fatalf("%s: still waiting after %s", what, d)
		return nil
	}
}

// TestSessionKeepsOpenFiles: on a read-only mount (no opens reach the
// worker) and a read-write one (every open gets a handle), a file read in
// part before the kill is read to its end through the same descriptor,
// and a directory stream read in part lists the rest.
func TestSessionKeepsOpenFiles(t *testing.T) {
	sizes := map[string]int{"big.bin": 24<<20 + 5}
	for i := range 300 {
		sizes[fmt.Sprintf("many/f%03d", i)] = 10
	}
	for _, mode := range []string{"read-only", "read-write"} {
		t.Run(mode, func(t *testing.T) {
			var extra []string
			if mode == "read-only" {
				extra = []string{"--read-only"}
			}
			m, _, sums := sessionMount(t, sizes, extra...)
			part := readPart(t, filepath.Join(m.dir, "big.bin"))
			d, err := os.Open(filepath.Join(m.dir, "many"))
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			names, err := d.Readdirnames(40)
			if err != nil {
				t.Fatal(err)
			}
			m.restart(t, 1)
			if err := part.rest(t, sums["big.bin"]); err != nil {
				t.Errorf("read through a descriptor opened before the kill: %v\n%s", err, m.stderr.String())
			}
			err = boundedBy(t, 60*time.Second, "readdir the rest", func() error {
				rest, err := d.Readdirnames(-1)
				names = append(names, rest...)
				return err
			})
			sort.Strings(names)
			want := make([]string, 300)
			for i := range want {
				want[i] = fmt.Sprintf("f%03d", i)
			}
			if err != nil || !slices.Equal(names, want) {
				t.Errorf("readdir across the kill: %d names, want each of f000..f299 once: %v", len(names), err)
			}
		})
	}
}

// TestSessionKeepsWorkingDirectory: a shell whose working directory is
// inside the mount goes on using relative paths after the kill.
func TestSessionKeepsWorkingDirectory(t *testing.T) {
	m, _, sums := sessionMount(t, map[string]int{"dir/sub/c.txt": 4096}, "--read-only")
	sh := exec.Command("sh", "-c", `cd "$1" && read go && sha256sum c.txt && ls`, "sh", filepath.Join(m.dir, "dir/sub"))
	in, err := sh.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	sh.Stdout, sh.Stderr = &out, &errOut
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	// The shell is in the directory once /proc says so.
	for deadline := time.Now().Add(30 * time.Second); ; {
		if cwd, _ := os.Readlink(fmt.Sprintf("/proc/%d/cwd", sh.Process.Pid)); cwd == filepath.Join(m.dir, "dir/sub") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the shell never entered the mount: %s", errOut.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	m.restart(t, 1)
	in.Write([]byte("go\n"))
	in.Close()
	err = boundedBy(t, 60*time.Second, "the shell", sh.Wait)
	want := fmt.Sprintf("%x  c.txt\nc.txt\n", sums["dir/sub/c.txt"])
	if err != nil || out.String() != want {
		t.Errorf("shell in the mount across the kill: %v\n got %q\nwant %q\n%s", err, out.String(), want, errOut.String())
	}
}

// TestSessionFailsTheWriter: a file open for writing when the worker dies
// reports EIO at close, and the object keeps its old version; a file
// written and closed before the kill is at the endpoint whole.
func TestSessionFailsTheWriter(t *testing.T) {
	m, cl, sums := sessionMount(t, map[string]int{"ckpt.bin": 1 << 20})
	saved := bytes.Repeat([]byte("saved"), 100_000)
	if err := os.WriteFile(filepath.Join(m.dir, "closed.bin"), saved, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(m.dir, "ckpt.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(bytes.Repeat([]byte("new"), 200_000)); err != nil {
		t.Fatal(err)
	}
	m.restart(t, 1)
	var werr error
	err = boundedBy(t, 60*time.Second, "write and close", func() error {
		_, werr = f.Write([]byte("more"))
		return f.Close()
	})
	if !errors.Is(err, syscall.EIO) || !errors.Is(werr, syscall.EIO) {
		t.Errorf("write, close of a file open for writing across the kill: %v, %v; want EIO", werr, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for key, want := range map[string][32]byte{"ckpt.bin": sums["ckpt.bin"], "closed.bin": sha256.Sum256(saved)} {
		obj, err := cl.GetObject(ctx, "train", key, minio.GetObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(obj)
		if err != nil || sha256.Sum256(b) != want {
			t.Errorf("%s at the endpoint: %d bytes, %v; not the version expected", key, len(b), err)
		}
	}
	// The mount goes on: a new writer's file lands.
	if err := os.WriteFile(filepath.Join(m.dir, "ckpt.bin"), saved, 0o644); err != nil {
		t.Errorf("write after the restart: %v", err)
	}
}

// TestSessionReadersAcrossKills: 8 readers read the data set whole, file
// by file (the kernel's cache dropped after each, so reads reach the
// worker), while the worker is killed three times: every byte right, no
// error. It logs the longest read that spanned a restart.
func TestSessionReadersAcrossKills(t *testing.T) {
	sizes := map[string]int{}
	for i := range 48 {
		sizes[fmt.Sprintf("set/s%02d", i)] = 256<<10 + i
	}
	m, _, sums := sessionMount(t, sizes, "--read-only")
	keys := make([]string, 0, len(sums))
	for k := range sums {
		keys = append(keys, k)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var slowest []time.Duration
	var failures []string
	reads := 0
	for r := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 1))
			var worst time.Duration
			for n := 0; ; n++ {
				select {
				case <-stop:
					mu.Lock()
					slowest = append(slowest, worst)
					mu.Unlock()
					return
				default:
				}
				key := keys[rng.IntN(len(keys))]
				start := time.Now()
				b, err := readUncached(filepath.Join(m.dir, key))
				worst = max(worst, time.Since(start))
				mu.Lock()
				reads++
				if err != nil || sha256.Sum256(b) != sums[key] {
					failures = append(failures, fmt.Sprintf("%s: %d bytes, %v", key, len(b), err))
				}
				mu.Unlock()
			}
		}()
	}
	progress := func() int { mu.Lock(); defer mu.Unlock(); return reads }
	for kill := 1; kill <= 3; kill++ {
		before := progress()
		for deadline := time.Now().Add(60 * time.Second); progress() < before+50; {
			if time.Now().After(deadline) {
				t.Fatalf("readers made no progress before kill %d", kill)
			}
			time.Sleep(10 * time.Millisecond)
		}
		m.restart(t, kill)
	}
	for before, deadline := progress(), time.Now().Add(60*time.Second); progress() < before+50; {
		if time.Now().After(deadline) {
			t.Fatal("readers made no progress after the last kill")
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	if boundedBy(t, 60*time.Second, "readers", func() error { wg.Wait(); return nil }) != nil {
		return
	}
	if len(failures) > 0 {
		t.Errorf("%d of %d reads failed across 3 kills, e.g. %s\n%s", len(failures), reads, failures[0], m.stderr.String())
	}
	slices.Sort(slowest)
	t.Logf("%d reads across 3 kills; each reader's longest read: %v", reads, slowest)
	if !strings.Contains(m.stderr.String(), "restarting in 0s") {
		t.Errorf("the first restart was not immediate:\n%s", m.stderr.String())
	}
}

// readUncached reads path whole, then drops its pages from the kernel's
// cache so that the next read reaches the worker.
func readUncached(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err == nil {
		err = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
	}
	return b, err
}

// TestBackoff: with a session, a worker that had mounted is replaced at
// once, maxQuickRestarts times in a row; then, and for a worker that
// never mounted, and without a session, the delays double.
func TestBackoff(t *testing.T) {
	young, old := workerResult{mounted: true, lived: time.Second}, workerResult{mounted: true, lived: resetRestartAfter}
	b := backoff{delay: minRestartDelay}
	for i := range maxQuickRestarts {
		if d := b.next(young, true); d != 0 {
			t.Fatalf("session restart %d: %s, want at once", i+1, d)
		}
	}
	for _, want := range []time.Duration{minRestartDelay, 2 * minRestartDelay} {
		if d := b.next(young, true); d != want {
			t.Fatalf("past %d quick restarts: %s, want %s", maxQuickRestarts, d, want)
		}
	}
	if d := b.next(old, true); d != 0 || b.quick != 1 {
		t.Fatalf("after a worker that lived %s: %s (quick %d), want at once", old.lived, d, b.quick)
	}
	if d := b.next(workerResult{lived: time.Second}, true); d != minRestartDelay {
		t.Fatalf("a worker that never mounted: %s, want %s", d, minRestartDelay)
	}
	b = backoff{delay: minRestartDelay}
	for _, want := range []time.Duration{minRestartDelay, 2 * minRestartDelay, 4 * minRestartDelay} {
		if d := b.next(young, false); d != want {
			t.Fatalf("without a session: %s, want %s", d, want)
		}
	}
}

// TestSessionWithoutRoot: a supervisor running as an ordinary user holds
// its connection through fusermount3, and a shell of that user (a mount
// is only for the user who made it) reads a file through a descriptor
// opened before the worker was killed.
func TestSessionWithoutRoot(t *testing.T) {
	if _, err := exec.LookPath("fusermount3"); err != nil {
		t.Fatalf("fusermount3 (Debian's fuse3, which make test installs): %v", err)
	}
	const nobody = 65534
	mio, _, sums := sessionOrigin(t, map[string]int{"big.bin": 8<<20 + 3})
	// The test binary and the mount point, where that user reaches them.
	home := t.TempDir()
	for _, d := range []string{filepath.Dir(home), home} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin, dir := filepath.Join(home, "granary.test"), filepath.Join(home, "mnt")
	if err := copyFile(os.Args[0], bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil || os.Chown(dir, nobody, nobody) != nil {
		t.Fatalf("mount point: %v", err)
	}
	cred := &syscall.Credential{Uid: nobody, Gid: nobody}
	m := spawnMountAs(t, bin, cred, minioEnv(mio), dir, "--read-only", "--supervise", "--endpoint", mio.URL(), "train", dir)
	m.awaitMounted(t, 1)
	sh := exec.Command("sh", "-c", `exec 3< "$1"; { dd bs=1M count=1 iflag=fullblock status=none <&3; echo ready >&2; read go; cat <&3; } | sha256sum`,
		"sh", filepath.Join(dir, "big.bin"))
	sh.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	in, err := sh.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	errOut := &syncbuf.Buffer{}
	sh.Stdout, sh.Stderr = &out, errOut
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(errOut.String(), "ready"); {
		if time.Now().After(deadline) {
			t.Fatalf("the reader never read the first MiB: %s\n%s", errOut.String(), m.stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	m.restart(t, 1)
	in.Write([]byte("go\n"))
	in.Close()
	err = boundedBy(t, 60*time.Second, "the reader", sh.Wait)
	if want := fmt.Sprintf("%x  -\n", sums["big.bin"]); err != nil || out.String() != want {
		t.Errorf("read across the kill as user %d: %v\n got %q\nwant %q\n%s\n%s", nobody, err, out.String(), want, errOut.String(), m.stderr.String())
	}
	if strings.Contains(m.stderr.String(), "remounts") {
		t.Errorf("the supervisor did not hold the connection:\n%s", m.stderr.String())
	}
}

// copyFile copies src to dst with mode perm.
func copyFile(src, dst string, perm os.FileMode) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, perm)
}

// TestSessionInterruptsOnOlderKernels: where the kernel cannot resend a
// dead worker's requests (before 6.9; here --fuse-resend=false), the
// supervisor answers each EINTR and the caller retries: a read in flight
// at the kill (its GET held up by a slow origin) completes, every byte
// right, and the mount stays.
func TestSessionInterruptsOnOlderKernels(t *testing.T) {
	mio, _, sums := sessionOrigin(t, map[string]int{"slow.bin": 2<<20 + 1})
	proxy, err := slowproxy.Start(mio.Endpoint, slowproxy.Options{Latency: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	dir := t.TempDir()
	m := spawnMount(t, minioEnv(mio), dir, "--fuse-resend=false", "--read-only", "--supervise", "--endpoint", "http://"+proxy.Addr(), "train", dir)
	m.awaitMounted(t, 1)
	path := filepath.Join(dir, "slow.bin")
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	up, _ := proxy.Forwarded()
	done := make(chan error, 1)
	go func() {
		b, err := os.ReadFile(path)
		if err == nil && sha256.Sum256(b) != sums["slow.bin"] {
			err = fmt.Errorf("%d bytes, not the object's", len(b))
		}
		done <- err
	}()
	// The worker has taken the read once its GET is on the way.
	for deadline := time.Now().Add(30 * time.Second); ; {
		if now, _ := proxy.Forwarded(); now > up {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the read never reached the origin:\n%s", m.stderr.String())
		}
		time.Sleep(time.Millisecond)
	}
	m.restart(t, 1)
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("read in flight at the kill: %v\n%s", err, m.stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("a read in flight at the kill still waits a minute later:\n%s", m.stderr.String())
	}
	answered := regexp.MustCompile(`answered the (\d+) request\(s\)`).FindStringSubmatch(m.stderr.String())
	if answered == nil || answered[1] == "0" {
		t.Errorf("the supervisor answered no request EINTR:\n%s", m.stderr.String())
	}
}

// TestSessionRenamedFile: a file renamed after it was opened reads on
// through its descriptor after the kill: the new worker finds the object
// under its new name.
func TestSessionRenamedFile(t *testing.T) {
	m, _, sums := sessionMount(t, map[string]int{"ckpt.tmp": 3<<20 + 9})
	part := readPart(t, filepath.Join(m.dir, "ckpt.tmp"))
	if err := os.Rename(filepath.Join(m.dir, "ckpt.tmp"), filepath.Join(m.dir, "ckpt.pt")); err != nil {
		t.Fatal(err)
	}
	m.restart(t, 1)
	if err := part.rest(t, sums["ckpt.tmp"]); err != nil {
		t.Errorf("read of a renamed file across the kill: %v", err)
	}
}

// partRead is a file read in part through one descriptor.
type partRead struct {
	f *os.File
	h hash.Hash // of what was read
}

// readPart opens path and reads its first MiB; the descriptor is closed
// when the test ends.
func readPart(t *testing.T, path string) partRead {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	p := partRead{f: f, h: sha256.New()}
	if _, err := io.CopyN(p.h, f, 1<<20); err != nil {
		t.Fatal(err)
	}
	return p
}

// rest reads the rest (bounded) and checks the whole file's sha256.
func (p partRead) rest(t *testing.T, want [32]byte) error {
	t.Helper()
	err := boundedBy(t, 60*time.Second, "read the rest", func() error {
		_, err := io.Copy(p.h, p.f)
		return err
	})
	if err == nil && [32]byte(p.h.Sum(nil)) != want {
		err = errors.New("the bytes read differ from the object's (sha256)")
	}
	return err
}

// TestSessionFailsAReaderOfAStage: a file opened for reading while
// another descriptor was writing it reads the staged bytes; after the
// kill those are gone, and it gets EIO, never the object's old bytes
// after the new ones.
func TestSessionFailsAReaderOfAStage(t *testing.T) {
	m, _, _ := sessionMount(t, map[string]int{"ckpt.bin": 4 << 20})
	path := filepath.Join(m.dir, "ckpt.bin")
	w, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	staged := bytes.Repeat([]byte("new!"), 512<<10) // 2 MiB
	if _, err := w.Write(staged); err != nil {
		t.Fatal(err)
	}
	r, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	first := make([]byte, 1<<20)
	if _, err := io.ReadFull(r, first); err != nil || !bytes.Equal(first, staged[:1<<20]) {
		t.Fatalf("read of the stage: %v", err)
	}
	m.restart(t, 1)
	// Pages the kernel keeps would answer without the mount.
	if err := unix.Fadvise(int(r.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
	rest := make([]byte, 1<<20)
	err = boundedBy(t, 60*time.Second, "read on", func() error {
		_, err := io.ReadFull(r, rest)
		return err
	})
	if !errors.Is(err, syscall.EIO) {
		t.Errorf("read of a stage across the kill: %v (new bytes after: %v); want EIO", err, bytes.Equal(rest, staged[1<<20:]))
	}
}
