// System calls per warm GET, the reads scenario's count that does not
// depend on the machine: after a set's rounds, the cache under test and
// the reference, both read signed, read the set once more with their
// processes traced by `strace -c -f`, which counts every call of every
// thread. Tracing slows what it traces, so these passes are counted,
// never timed. Without strace, or without leave to trace, the section
// says why and the scenario goes on.
package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// syscallCount is one system call's line of strace's summary.
type syscallCount struct {
	name          string
	calls, errors int64
}

// censusRow is one traced pass: what target's processes called while it
// answered gets GETs of the set.
type censusRow struct {
	set    string
	conc   int
	target string
	gets   int
	calls  []syscallCount // most called first
}

// censusRoles are the passes traced after each set's rounds: the subject
// and the reference, read with the same signed GETs.
var censusRoles = []role{roleSubject, roleReferenceSigned}

// censusReady bounds the wait for strace to attach to every thread.
const censusReady = 10 * time.Second

// measureCensus traces one pass of set through each target of
// censusRoles. A census that cannot run (no strace, no leave to trace)
// is noted in the report, not an error; a failed read is.
func measureCensus(ctx context.Context, clients []*client, targets []target, set objectSet, rep *report,
	logf func(string, ...any)) error {
	for _, ro := range censusRoles {
		i := roleIndex(targets, ro)
		if i < 0 || targets[i].procs == nil || rep.censusSkipped != "" {
			continue
		}
		t := targets[i]
		var res smallResult
		calls, err := underStrace(ctx, t.procs(), func() error {
			var rerr error
			res, rerr = runSmall(ctx, clients[i], set, t.name+" census")
			return rerr
		})
		var skip *censusSkip
		switch {
		case errors.As(err, &skip):
			rep.censusSkipped = skip.reason
			logf("system call census skipped: %s", skip.reason)
			return nil
		case err != nil:
			return err
		}
		row := censusRow{set: set.name, conc: set.conc, target: t.name, gets: res.n, calls: calls}
		logf("%s c%d %s: %.2f system calls per GET", set.name, set.conc, t.name, row.perGet())
		rep.census = append(rep.census, row)
	}
	return nil
}

// censusSkip is a census that could not run; reason says why.
type censusSkip struct{ reason string }

func (c *censusSkip) Error() string { return c.reason }

// underStrace runs run with every thread of pids traced by strace -c and
// returns the calls counted, most first. It fails with a *censusSkip
// when strace is missing or cannot attach, before run is called.
func underStrace(ctx context.Context, pids []int, run func() error) ([]syscallCount, error) {
	bin, err := exec.LookPath("strace")
	if err != nil {
		return nil, &censusSkip{"strace is not installed"}
	}
	dir, err := os.MkdirTemp("", "granary-census-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "summary")
	args := []string{"-c", "-f", "-q", "-o", out}
	for _, p := range pids {
		args = append(args, "-p", strconv.Itoa(p))
	}
	cmd := exec.Command(bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, &censusSkip{fmt.Sprintf("strace: %v", err)}
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(censusReady):
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	if err := waitTraced(ctx, pids, exited); err != nil {
		stop()
		return nil, &censusSkip{fmt.Sprintf("strace did not attach: %v %s", err, strings.TrimSpace(stderr.String()))}
	}
	runErr := run()
	stop()
	if runErr != nil {
		return nil, runErr
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return nil, fmt.Errorf("strace's summary: %w", err)
	}
	return parseStraceSummary(string(b))
}

// waitTraced polls until every thread of pids has a tracer, strace
// exits, ctx ends or censusReady passes.
func waitTraced(ctx context.Context, pids []int, exited <-chan error) error {
	deadline := time.Now().Add(censusReady)
	for {
		if allTraced(pids) {
			return nil
		}
		select {
		case err := <-exited:
			return fmt.Errorf("strace exited: %v", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not every thread traced within %v", censusReady)
		}
	}
}

// allTraced reports whether every thread of pids has a tracer
// (TracerPid in its status).
func allTraced(pids []int) bool {
	errUntraced := errors.New("untraced")
	for _, p := range pids {
		err := eachTaskStatus(p, func(_, status string) error {
			if v, ok := statusField(status, "TracerPid"); !ok || v == "0" {
				return errUntraced
			}
			return nil
		})
		if err != nil {
			return false
		}
	}
	return true
}

// parseStraceSummary reads strace -c's table: after its heading, a line
// per call of "% time, seconds, usecs/call, calls, [errors,] syscall",
// then a total, which is left out. The counts come back most first.
func parseStraceSummary(s string) ([]syscallCount, error) {
	var out []syscallCount
	for line := range strings.Lines(s) {
		f := strings.Fields(line)
		if len(f) < 5 || strings.HasPrefix(f[0], "%") || strings.HasPrefix(f[0], "-") {
			continue
		}
		c := syscallCount{name: f[len(f)-1]}
		if c.name == "total" {
			continue
		}
		var err error
		if c.calls, err = strconv.ParseInt(f[3], 10, 64); err != nil {
			return nil, fmt.Errorf("strace's summary: %q: %w", line, err)
		}
		if len(f) == 6 {
			if c.errors, err = strconv.ParseInt(f[4], 10, 64); err != nil {
				return nil, fmt.Errorf("strace's summary: %q: %w", line, err)
			}
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("strace's summary holds no calls")
	}
	slices.SortStableFunc(out, func(a, b syscallCount) int { return cmp.Compare(b.calls, a.calls) })
	return out, nil
}

// perGet is the row's system calls per GET.
func (c censusRow) perGet() float64 {
	var n int64
	for _, s := range c.calls {
		n += s.calls
	}
	return c.per(n)
}

// per is n per GET of the row.
func (c censusRow) per(n int64) float64 { return float64(n) / float64(max(c.gets, 1)) }

// censusMin is the least a call is made per GET to be named in the
// table; the rest are summed as "others".
const censusMin = 0.01

// describe renders the row's calls per GET: "read 1.37 (0.37 failed),
// write 1.00, others 0.05".
func (c censusRow) describe() string {
	var parts []string
	var others float64
	for _, s := range c.calls {
		per := c.per(s.calls)
		if per < censusMin {
			others += per
			continue
		}
		p := fmt.Sprintf("%s %.2f", s.name, per)
		if failed := c.per(s.errors); failed >= 0.005 {
			p += fmt.Sprintf(" (%.2f failed)", failed)
		}
		parts = append(parts, p)
	}
	switch {
	case others >= 0.005:
		parts = append(parts, fmt.Sprintf("others %.2f", others))
	case others > 0:
		parts = append(parts, "others under 0.01")
	}
	return strings.Join(parts, ", ")
}

// censusTable renders the traced passes, or why there are none.
func (r *report) censusTable(b *strings.Builder) {
	if len(r.census) == 0 && r.censusSkipped == "" {
		return
	}
	b.WriteString("## System calls per warm GET\n\n" +
		"After each set's rounds, the cache under test and the reference each read the set once more, " +
		"signed, with every thread of their processes traced by `strace -c -f`: a count that does not depend on the " +
		"machine's speed. Tracing slows the pass, so it is not timed. A failed call is mostly a read " +
		"that found nothing yet (EAGAIN).\n\n")
	if r.censusSkipped != "" {
		fmt.Fprintf(b, "Not measured: %s.\n\n", r.censusSkipped)
		return
	}
	b.WriteString("| objects | conc | target | calls per GET | each call per GET |\n|---|---:|---|---:|---|\n")
	for _, c := range r.census {
		fmt.Fprintf(b, "| %s | %d | %s | %.2f | %s |\n", c.set, c.conc, c.target, c.perGet(), c.describe())
	}
	b.WriteString("\n")
}
