// Smoke tests of the checkpoint scenario in quick mode: the direct rows
// (MinIO behind the slow proxy) and the nginx rows always, the granary
// rows with a granary binary built from this tree when it has write modes
// and flush.
package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/granary-dev/granary/internal/slowproxy"
)

func TestQuickCheckpointDirect(t *testing.T) {
	if testing.Short() {
		t.Skip("starts MinIO and moves a few hundred MB through the slow proxy")
	}
	needNginx(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var log bytes.Buffer
	rep, err := runCheckpoint(ctx, options{quick: true, slow: slowproxy.DefaultOptions()}, &log)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	total := quickCkptPlan().total()
	checkCkptRows(t, rep, ckptDirectRows(total))
	md := rep.markdown()
	for _, want := range []string{"| save | " + targetDirect + " |", "| restore | " + targetDirect + " |",
		"| restore | " + targetNginxSecond + " |", "quick mode", "5ms one-way latency"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}

// TestQuickCheckpointGranary runs the whole scenario with a granary built
// from this tree (or the binary in $LOADTEST_GRANARY). It skips when that
// binary has no write modes yet.
func TestQuickCheckpointGranary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds granary, starts MinIO and granary twice")
	}
	bin := granaryForTest(t)
	if err := checkpointSupport(bin); err != nil {
		t.Skipf("granary lacks what the checkpoint scenario needs: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var log bytes.Buffer
	rep, err := runCheckpoint(ctx, options{granary: bin, quick: true, slow: slowproxy.DefaultOptions()}, &log)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	t.Log("\n" + rep.markdown())
	total := quickCkptPlan().total()
	shard := total / 4
	checkCkptRows(t, rep, append(ckptDirectRows(total), []ckptWant{
		{"save", targetWT, total, -1},
		// Restores from the cache: at most a tenth across the link.
		{"restore", targetWTNow, 0, total / 10},
		{"restore", targetWTCache, 0, total / 10},
		{opRestoreRanged, targetWTCache, 0, total / 10},
		{"save", targetWBAck, 0, -1},
		{"restore", targetWBNow, 0, total / 10},
		{"save", targetWBPersisted, total, -1},
		{"restore", targetWBCache, 0, total / 10},
		{"restore", targetCold, total, -1},
		{opRestoreOne, targetCold, shard, -1},
	}...))
	if ack, done := rep.find("save", targetWBAck), rep.find("save", targetWBPersisted); done.elapsed < ack.elapsed {
		t.Errorf("persisted after %v, before the acknowledgement at %v", done.elapsed, ack.elapsed)
	}
	// Every step a cache served has its CPU, the direct ones none, nor
	// the write-back save until flushed (a restore ran meanwhile).
	for _, row := range rep.rows {
		cached := row.target != targetDirect && row.target != targetWBPersisted
		if cached != (row.cacheCPU > 0) {
			t.Errorf("%s %s: cache CPU %v", row.op, row.target, row.cacheCPU)
		}
	}
	if len(rep.rss) != 2 || rep.rss[0].bytes <= 0 || rep.rss[1].bytes <= 0 {
		t.Errorf("peak RSS notes %+v", rep.rss)
	}
	if md := rep.markdown(); !strings.Contains(md, "## The issue's targets") || !strings.Contains(md, "peak RSS") {
		t.Errorf("report lacks the targets or the memory:\n%s", md)
	} else if n := len(regexp.MustCompile(`\| [^|]*restore from the cache[^|]*, CPU per GiB against nginx's \| \d+\.\d\dx \(`).FindAllString(md, -1)); n != 2 {
		t.Errorf("report has %d of the restores' CPU against nginx's, want 2:\n%s", n, md)
	}
}

// ckptWant is a row a checkpoint run must have.
type ckptWant struct {
	op, target string
	minOrigin  int64 // bytes across the slow link, at least
	maxOrigin  int64 // and at most (-1: no bound)
}

// ckptDirectRows are the rows of a run without granary: direct, then
// nginx, whose save and first restore cross the link and whose second
// restore is served from its cache.
func ckptDirectRows(total int64) []ckptWant {
	return []ckptWant{
		{"save", targetDirect, total, -1},
		{"restore", targetDirect, total, -1},
		{opRestoreOne, targetDirect, total / 4, -1},
		{"save", targetNginxSave, total, -1},
		{"restore", targetNginxNow, total, -1},
		{"restore", targetNginxSecond, 0, total / 10},
		{opRestoreRanged, targetNginxSecond, 0, total / 10},
	}
}

// checkCkptRows checks rep's rows against want, in order.
func checkCkptRows(t *testing.T, rep *ckptReport, want []ckptWant) {
	t.Helper()
	total := rep.plan.total()
	if len(rep.rows) != len(want) {
		t.Fatalf("%d rows, want %d: %+v", len(rep.rows), len(want), rep.rows)
	}
	for i, w := range want {
		r := rep.rows[i]
		bytes := total
		if w.op == opRestoreOne {
			bytes = total / int64(rep.plan.shards)
		}
		if r.op != w.op || r.target != w.target || r.bytes != bytes || r.elapsed <= 0 ||
			r.originBytes < w.minOrigin || (w.maxOrigin >= 0 && r.originBytes > w.maxOrigin) {
			t.Errorf("row %d: %+v, want %s %s with %d..%d bytes across the link", i, r, w.op, w.target, w.minOrigin, w.maxOrigin)
		}
	}
}

// granaryForTest returns $LOADTEST_GRANARY, or a granary built from this
// tree into a temporary directory.
func granaryForTest(t *testing.T) string {
	if bin := os.Getenv("LOADTEST_GRANARY"); bin != "" {
		return bin
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build granary with")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "granary")
	out, err := exec.CommandContext(ctx, gobin, "build", "-o", bin, "github.com/granary-dev/granary/cmd/granary").CombinedOutput()
	if err != nil {
		t.Fatalf("go build granary: %v\n%s", err, out)
	}
	return bin
}
