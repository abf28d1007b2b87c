// The mount scenario's crash rows: a supervised read-only mount whose
// worker is killed (SIGKILL) while readers stream the small files, and
// the pause each reader sees across every restart.
package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

const (
	// crashKills is how many times the worker is killed.
	crashKills = 5
	// crashSteady is how long the readers run before the first kill,
	// for the per-read latency without a crash.
	crashSteady = 3 * time.Second
	// crashBetween is how many reads complete between restarts.
	crashBetween = 400
)

// crashModes are the ways a supervisor carries on after a worker died:
// the kernel resends what the dead worker had taken (Linux 6.9+), or, as
// on older kernels, the supervisor answers those EINTR and callers retry.
var crashModes = []struct{ name, flag string }{
	{"kernel resends (Linux 6.9+)", "--fuse-resend=true"},
	{"EINTR answers (older kernels)", "--fuse-resend=false"},
}

// crashReport is the crash rows' result for one mode.
type crashReport struct {
	mode     string
	kills    int
	reads    int
	failed   int
	firstErr string
	steady   []time.Duration // per-read latency before the first kill, sorted
	rate     float64         // reads per second before the first kill
	pauses   []time.Duration // per reader and kill: the gap between its completions around the kill, sorted
	restarts []time.Duration // kill to the new worker's "mounted" line, sorted
}

// workerPidRE matches a worker's "mounted" line in the supervisor's log.
var workerPidRE = regexp.MustCompile(`granary: mounted s3://\S* at \S+ \(endpoint \S+, pid (\d+)\)`)

// crashRows measures each of crashModes.
func (r *mountRun) crashRows(ctx context.Context, bin string, g *granaryProc, dir string) error {
	for i, mode := range crashModes {
		if err := r.crashRow(ctx, bin, g, dir, fmt.Sprintf("mnt-crash-%d", i), mode.name, mode.flag); err != nil {
			return fmt.Errorf("crash, %s: %w", mode.name, err)
		}
	}
	return nil
}

// crashRow mounts the bucket supervised (with flag) at dir/name and
// measures the readers across crashKills kills of the worker.
func (r *mountRun) crashRow(ctx context.Context, bin string, g *granaryProc, dir, name, mode, flag string) error {
	mnt, logPath, err := mountDirs(dir, name)
	if err != nil {
		return err
	}
	m, err := startMount(bin, g.endpoint(), granaryAccess, granarySecret, mountBucket, mnt, logPath,
		r.rep.plan.maxMemory, "--supervise", "--read-only", flag)
	if err != nil {
		return err
	}
	defer m.stop()
	if err := r.listSmall(mnt); err != nil {
		return err
	}
	c, err := r.crashReaders(ctx, m, openUncachedUnder(mnt))
	if err != nil {
		return fmt.Errorf("%w\ngranary mount log tail:\n%s", err, m.tail())
	}
	c.mode = mode
	r.rep.crash = append(r.rep.crash, c)
	r.logf("crash, %s: %d kills, %d reads (%d failed); pause p50 %s p99 %s max %s; restart p50 %s", mode,
		c.kills, c.reads, c.failed, pct(c.pauses, 50), pct(c.pauses, 99), pct(c.pauses, 100), pct(c.restarts, 50))
	return m.stop()
}

// crashReaders runs the readers, kills the worker crashKills times once
// they have made progress, and collects the pauses.
func (r *mountRun) crashReaders(ctx context.Context, m *mountProc, open func(object) (io.ReadCloser, error)) (*crashReport, error) {
	readers := r.rep.plan.readers
	done := make([][]time.Time, readers) // each reader's completion times
	var mu sync.Mutex
	c := &crashReport{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	start := time.Now()
	for w := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 2*len(r.d.small[0].data)+1)
			for i := w; ; i += readers {
				select {
				case <-stop:
					return
				default:
				}
				t0 := time.Now()
				err := readOne(r.d.small[i%len(r.d.small)], buf, open)
				now := time.Now()
				mu.Lock()
				c.reads++
				if err != nil {
					c.failed++
					c.firstErr = cmp.Or(c.firstErr, err.Error())
				} else {
					done[w] = append(done[w], now)
					if now.Sub(start) < crashSteady {
						c.steady = append(c.steady, now.Sub(t0))
					}
				}
				mu.Unlock()
			}
		}()
	}
	defer func() {
		close(stop)
		if !waitBounded(&wg, time.Minute) {
			_ = m.stop() // a reader hangs on the mount: ending the connection frees it
			wg.Wait()
		}
	}()
	count := func() int { mu.Lock(); defer mu.Unlock(); return c.reads }
	if err := sleepCtx(ctx, crashSteady); err != nil {
		return nil, err
	}
	c.rate = float64(count()) / time.Since(start).Seconds()
	var kills []time.Time
	for k := 1; k <= crashKills; k++ {
		pid, err := workerPid(m, k)
		if err != nil {
			return nil, err
		}
		before := count()
		killed := time.Now()
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			return nil, fmt.Errorf("kill worker %d: %w", pid, err)
		}
		if _, err := workerPid(m, k+1); err != nil {
			return nil, err
		}
		c.restarts = append(c.restarts, time.Since(killed))
		kills = append(kills, killed)
		for count() < before+crashBetween {
			if err := sleepCtx(ctx, 10*time.Millisecond); err != nil {
				return nil, err
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	c.kills = len(kills)
	for _, k := range kills {
		for _, times := range done {
			if gap, ok := gapAround(times, k); ok {
				c.pauses = append(c.pauses, gap)
			}
		}
	}
	slices.Sort(c.steady)
	slices.Sort(c.pauses)
	slices.Sort(c.restarts)
	return c, nil
}

// waitBounded waits for wg at most d and reports whether it is done.
func waitBounded(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// gapAround returns the time between a reader's last completion before
// t and its first after: the pause it saw.
func gapAround(times []time.Time, t time.Time) (time.Duration, bool) {
	i, _ := slices.BinarySearchFunc(times, t, func(a, b time.Time) int { return a.Compare(b) })
	if i == 0 || i == len(times) {
		return 0, false
	}
	return times[i].Sub(times[i-1]), true
}

// workerPid waits (bounded) for the n-th worker's "mounted" line in the
// supervisor's log and returns its pid.
func workerPid(m *mountProc, n int) (int, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := os.ReadFile(m.log.Name())
		if all := workerPidRE.FindAllSubmatch(b, -1); len(all) >= n {
			return strconv.Atoi(string(all[n-1][1]))
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("no worker %d mounted within 30s", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// openUncachedUnder opens files under dir whose pages are dropped from
// the kernel's cache at close, so that every read reaches the mount.
func openUncachedUnder(dir string) func(object) (io.ReadCloser, error) {
	return func(o object) (io.ReadCloser, error) {
		f, err := os.Open(filepath.Join(dir, o.key))
		if err != nil {
			return nil, err
		}
		return uncached{f}, nil
	}
}

type uncached struct{ *os.File }

func (u uncached) Close() error {
	_ = unix.Fadvise(int(u.Fd()), 0, 0, unix.FADV_DONTNEED)
	return u.File.Close()
}

// pct returns the p-th percentile of sorted, rounded for a report.
func pct(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := min(len(sorted)-1, len(sorted)*p/100)
	return sorted[i].Round(time.Millisecond / 10)
}

// crashMarkdown renders the crash section: one table row group per mode.
func crashMarkdown(b *strings.Builder, crashes []*crashReport, readers int) {
	fmt.Fprintf(b, "## Worker crash (`--supervise`)\n\nMore mounts, `--supervise --read-only`, one per way of carrying on: %d readers read the small files whole, "+
		"each file's pages dropped from the kernel's cache after it (so every read reaches the mount), and the worker is killed with SIGKILL "+
		"%d times, each once %d reads completed after the previous restart. A reader's pause is the time between its last read that completed "+
		"before a kill and its first after. The older kernels' way is this kernel with --fuse-resend=false.\n\n", readers, crashKills, crashBetween)
	b.WriteString("| carried on by | measure | p50 | p99 | max |\n|---|---|---:|---:|---:|\n")
	for _, c := range crashes {
		fmt.Fprintf(b, "| %s | one read, no crash (first %s: %.0f reads/s) | %s | %s | %s |\n", c.mode, crashSteady, c.rate, pct(c.steady, 50), pct(c.steady, 99), pct(c.steady, 100))
		fmt.Fprintf(b, "| %s | a reader's pause across a restart (%d: %d readers x %d kills) | %s | %s | %s |\n",
			c.mode, len(c.pauses), readers, c.kills, pct(c.pauses, 50), pct(c.pauses, 99), pct(c.pauses, 100))
		fmt.Fprintf(b, "| %s | kill to the new worker's \"mounted\" line | %s | %s | %s |\n", c.mode, pct(c.restarts, 50), pct(c.restarts, 99), pct(c.restarts, 100))
	}
	b.WriteString("\n")
	for _, c := range crashes {
		if c.failed == 0 {
			fmt.Fprintf(b, "%s: %d reads, every one whole and right; none failed.\n\n", c.mode, c.reads)
		} else {
			fmt.Fprintf(b, "**%s: %d reads, %d failed** (first: %s).\n\n", c.mode, c.reads, c.failed, c.firstErr)
		}
	}
}
