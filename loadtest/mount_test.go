// Smoke test of the mount scenario in quick mode, with a granary binary
// built from this tree: every row present and verified, the mount gone
// afterwards. No timing is asserted.
package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestQuickMount(t *testing.T) {
	if testing.Short() {
		t.Skip("builds granary, starts MinIO, granary and a FUSE mount")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("no FUSE here: %v", err)
	}
	bin := granaryForTest(t)
	if out, err := exec.Command(bin, "mount", "--help").CombinedOutput(); err != nil {
		t.Skipf("granary has no mount command: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var log bytes.Buffer
	rep, err := runMount(ctx, options{granary: bin, quick: true}, &log)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	md := rep.markdown()
	t.Log("\n" + md)
	p := quickMountPlan()
	want := []struct{ kind, target string }{
		{kindSeq, targetLocalCold}, {kindSeq, targetLocalWarm}, {kindSmall, targetLocalWarm},
		{kindSeq, targetMountCold}, {kindSeq, targetMountWarm}, {kindSeq, targetGatewayWarm},
		{kindSmall, targetMountCold}, {kindSmall, targetMountWarm}, {kindSmall, targetGatewayWarm},
		{kindSmall, targetRWFirst}, {kindSmall, targetRWWarm}, {kindSmall, targetExpiredWarm},
	}
	if len(rep.rows) != len(want) {
		t.Fatalf("%d rows, want %d: %+v", len(rep.rows), len(want), rep.rows)
	}
	for i, w := range want {
		r := rep.rows[i]
		files, bytes, runs := 1, p.largeSize, 1
		if w.kind == kindSmall {
			files, bytes = p.files, int64(p.files*p.fileSize)
			if w.target == targetLocalWarm || w.target == targetMountWarm || w.target == targetGatewayWarm || w.target == targetRWWarm {
				runs = warmSmallRuns
			}
		} else if w.target != targetLocalCold && w.target != targetMountCold {
			runs = warmSeqRuns
		}
		if r.kind != w.kind || r.target != w.target || r.files != files || r.verified != files ||
			r.bytes != bytes || r.runs != runs || r.elapsed <= 0 {
			t.Errorf("row %d: %+v, want %s %s over %d files (%d bytes), all verified", i, r, w.kind, w.target, files, bytes)
		}
		if !strings.Contains(md, "| "+w.kind+" | "+w.target+" |") {
			t.Errorf("report lacks row %s %s", w.kind, w.target)
		}
	}
	if s := rep.save; s == nil || !s.verified || s.bytes != p.largeSize || s.mountCPU <= 0 || s.nodeCPU <= 0 || s.direct <= 0 ||
		!strings.Contains(md, "## Saving through the mount") {
		t.Errorf("save row %+v, want the large file saved, read back whole, with its CPU", rep.save)
	}
	if !rep.unmounted || rep.unmountErr != nil {
		t.Errorf("not unmounted cleanly: %v", rep.unmountErr)
	}
	if still, err := isMountpoint(rep.mountpoint); err != nil || still || rep.mountpoint == "" {
		t.Errorf("mountpoint %q still mounted (%v)", rep.mountpoint, err)
	}
	if os.Geteuid() == 0 && !rep.cacheDropped {
		t.Error("running as root, yet the page cache was not dropped")
	}
	if rep.peakRSS <= 0 {
		t.Errorf("peak RSS %d", rep.peakRSS)
	}
	if len(rep.crash) != len(crashModes) {
		t.Errorf("crash rows for %d modes, want %d", len(rep.crash), len(crashModes))
	}
	for _, c := range rep.crash {
		if c.kills != crashKills || len(c.pauses) == 0 || len(c.restarts) != crashKills {
			t.Errorf("crash rows: %+v", c)
		} else if os.Geteuid() == 0 && c.failed > 0 {
			t.Errorf("%s: %d of %d reads failed across the worker's crashes: %s", c.mode, c.failed, c.reads, c.firstErr)
		}
	}
	for _, s := range []string{"## The issue's targets", "warm sequential read through the mount", "## Worker crash",
		"small files through the mount", "peak RSS of the mount", "quick mode", "drop_caches"} {
		if !strings.Contains(md, s) {
			t.Errorf("report lacks %q", s)
		}
	}
}

// TestMountReportTargets checks the targets table against hand-made rows:
// the ratios are to the warm local disk rows, the RSS bound is
// --max-memory plus 64 MiB.
func TestMountReportTargets(t *testing.T) {
	p := quickMountPlan()
	row := func(kind, target string, d time.Duration) mountRow {
		return mountRow{kind: kind, target: target, bytes: 100e6, files: 1000, verified: 1000, runs: 1, elapsed: d}
	}
	rep := &mountReport{plan: p, peakRSS: p.maxMemory + 65<<20, unmounted: true, cacheDropped: true, rows: []mountRow{
		row(kindSeq, targetLocalCold, 4*time.Second), row(kindSeq, targetLocalWarm, time.Second),
		row(kindSmall, targetLocalWarm, time.Second), row(kindSeq, targetMountCold, 8*time.Second),
		row(kindSeq, targetMountWarm, 1250*time.Millisecond), row(kindSmall, targetMountWarm, 4*time.Second),
	}}
	md := rep.markdown()
	for _, s := range []string{
		"| warm sequential read through the mount | 0.80x local disk | ≥ 0.7x local disk | yes |",
		"| small files through the mount (warm pass) | 0.25x local disk | ≥ 0.5x local disk | **no** |",
		"| peak RSS of the mount | 321 MiB | ≤ 320 MiB | **no** |",
		"| sequential | " + targetMountCold + " | 12 MB/s | 8.000 | 0.50x | 1000/1000 | 1 |", // vs the cold local read
		"| small files | " + targetMountWarm + " | 250 files/s | 4.000 | 0.25x | 1000/1000 | 1 |",
	} {
		if !strings.Contains(md, s) {
			t.Errorf("report lacks %q:\n%s", s, md)
		}
	}
}
