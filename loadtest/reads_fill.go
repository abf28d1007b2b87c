// Warm reads while a checkpoint lands, the reads scenario's last table:
// each cache's warm reads of the largest small objects at the highest
// concurrency on a quiet cache, then again at once after a checkpoint
// saved through the same cache returned, in rounds (the figure is their
// median). Whatever the cache does with
// the saved bytes afterwards (Granary fills its tiers from its copy)
// competes with the readers; training reads never stop while a
// checkpoint is written.
package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// fillResult is one cache's quiet and during-a-fill passes.
type fillResult struct {
	target        string
	round         int // from 1
	saved         int64
	save          time.Duration
	quiet, during smallResult
	// what the kernel reclaimed over each pass (reclaim.go)
	quietReclaim, duringReclaim reclaim
}

// saveSize is the checkpoint saved before the during-a-fill pass.
func saveSize(quick bool) int64 {
	if quick {
		return 64 << 20
	}
	return 1 << 30
}

// saverCreds are the credentials a checkpoint is saved with through t: its
// own, or (nginx passes writes through unsigned by itself) the origin's.
type saverCreds struct{ access, secret string }

// fillRounds is how many times each cache is measured during a fill:
// one round's ratio moves by a fifth between runs of one build (the
// machine's memory and its other work), so the figure is the median.
func fillRounds(quick bool) int {
	if quick {
		return 1
	}
	return 3
}

// measureFills runs the quiet and during-a-fill passes for every cache in
// targets that takes writes (nginx and a signed granary target), in
// fillRounds rounds, the caches' order turned round each round. Each
// round saves other bytes (its number in the first ones), so each is a
// new version for the cache to fill.
func measureFills(ctx context.Context, d *dataset, targets []target, origin saverCreds, rep *report, logf func(string, ...any)) error {
	set := d.sets[len(d.sets)-1] // the largest objects at the highest concurrency
	payload := randomBytes(saveSize(rep.quick), 99)
	var savers []target
	for _, t := range targets {
		if t.targetKind == kindNginx || t.targetKind == kindGranary {
			savers = append(savers, t)
		}
	}
	for round := range fillRounds(rep.quick) {
		binary.LittleEndian.PutUint64(payload, uint64(round))
		for k := range savers {
			t := savers[k]
			if round%2 == 1 {
				t = savers[len(savers)-1-k]
			}
			creds := saverCreds{t.access, t.secret}
			if t.targetKind == kindNginx {
				creds = origin
			}
			r, err := measureFill(ctx, d, set, t, creds, payload, fillPassTime(rep.quick))
			if err != nil {
				return fmt.Errorf("%s during a fill: %w", t.name, err)
			}
			r.round = round + 1
			logf("%s, round %d: warm %s c%d quiet %.0f ops/s, right after a %s save (%v) %.0f ops/s (%.2fx); reclaimed %v / %v", t.name, r.round,
				set.name, set.conc, r.quiet.opsPerSec(), mib(r.saved), r.save.Round(time.Millisecond), r.during.opsPerSec(), r.ratio(),
				r.quietReclaim, r.duringReclaim)
			rep.fills = append(rep.fills, r)
		}
	}
	return nil
}

// ratio is the during-a-fill rate against the quiet one.
func (f fillResult) ratio() float64 { return f.during.opsPerSec() / f.quiet.opsPerSec() }

// measureFill reads set through t quietly, saves payload through t, and
// reads set again the moment the save returns.
func measureFill(ctx context.Context, d *dataset, set objectSet, t target, creds saverCreds, payload []byte, least time.Duration) (fillResult, error) {
	r := fillResult{target: t.name, saved: int64(len(payload))}
	cl := newClient(t, d.bucket, set.conc)
	defer cl.close()
	if _, err := runSmall(ctx, cl, set, "connecting"); err != nil { // untimed: the client's connections and buffers
		return r, err
	}
	// Quiet: an earlier save's pages reach the disk now, not during the
	// quiet pass, and the cache is done with the earlier passes' fills.
	syscall.Sync()
	if err := settle(ctx, t.procs, true); err != nil {
		return r, err
	}
	var err error
	before := readReclaim()
	if r.quiet, err = runMetered(ctx, cl, set, t, "quiet", least); err != nil {
		return r, err
	}
	r.quietReclaim = readReclaim().sub(before)
	saver, err := minio.New(strings.TrimPrefix(t.endpoint, "http://"), &minio.Options{
		Creds: credentials.NewStaticV4(creds.access, creds.secret, ""), Region: "us-east-1"})
	if err != nil {
		return r, err
	}
	start := time.Now()
	if _, err := saver.PutObject(ctx, d.bucket, "checkpoints/"+t.name, bytes.NewReader(payload), int64(len(payload)),
		minio.PutObjectOptions{PartSize: 16 << 20, NumThreads: 4, ContentType: "application/octet-stream"}); err != nil {
		return r, err
	}
	r.save = time.Since(start)
	before = readReclaim()
	r.during, err = runMetered(ctx, cl, set, t, "during a fill", least)
	r.duringReclaim = readReclaim().sub(before)
	return r, err
}

// settle waits until ps (a cache's processes) are idle, under a
// twentieth of a core over settleWindow, and with wholeMachine the
// machine as well (under a fifth of a core), or settleLimit passed: a
// cache still writing what the earlier passes brought (a gigabyte to its
// disk tier), or the kernel writing back an earlier save's pages, is not
// quiet. It gives up quietly at the limit: the pass is measured anyway.
func settle(ctx context.Context, ps procSet, wholeMachine bool) error {
	const (
		settleWindow = 500 * time.Millisecond
		settleLimit  = 30 * time.Second
	)
	deadline := time.Now().Add(settleLimit)
	for time.Now().Before(deadline) {
		c0, err := cpuOf(ps)
		if err != nil {
			return err
		}
		m0 := machineBusy()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(settleWindow):
		}
		c1, err := cpuOf(ps)
		if err != nil {
			return err
		}
		if c1-c0 < settleWindow/20 && (!wholeMachine || machineBusy()-m0 < settleWindow/5) {
			return nil
		}
	}
	return nil
}

// machineBusy is the CPU time all cores spent busy since boot (from
// /proc/stat: everything but idle and iowait); zero if unreadable.
func machineBusy() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal ...
	var busy int64
	for i, v := range f[1:] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || i == 3 || i == 4 || i > 7 {
			continue
		}
		busy += n
	}
	return time.Duration(busy) * clockTick
}

// fillPassTime is how long a quiet or during-a-fill pass reads at least:
// the set again and again, so that a pass spans a good part of the fill.
func fillPassTime(quick bool) time.Duration {
	if quick {
		return 2 * time.Second
	}
	return 5 * time.Second
}

// runMetered reads set through cl, whole passes until least has gone by,
// and returns their GETs, time and CPU use as one pass (p50 and p99 are
// the last pass's).
func runMetered(ctx context.Context, cl *client, set objectSet, t target, label string, least time.Duration) (smallResult, error) {
	meter, err := startCPU(t)
	if err != nil {
		return smallResult{}, err
	}
	var sum smallResult
	for sum.elapsed < least {
		r, err := runSmall(ctx, cl, set, label)
		if err != nil {
			return r, err
		}
		r.n, r.elapsed = r.n+sum.n, r.elapsed+sum.elapsed
		sum = r
	}
	sum.cpu, err = meter.used()
	return sum, err
}

// fillTable renders the quiet and during-a-fill passes, round by round,
// and each cache's median ratio.
func (r *report) fillTable(b *strings.Builder) {
	if len(r.fills) == 0 {
		return
	}
	b.WriteString("## Warm reads while a checkpoint lands\n\n" +
		"Each cache's warm reads (the set again and again, for a few seconds) on a quiet cache (its processes idle first), then again the moment a checkpoint save through the same cache returned " +
		"(minio-go, 16 MiB parts, 4 at once), in rounds, the caches' order turned round each round and each round's save a new version. " +
		"nginx passes the save to MinIO; Granary also fills its tiers from its own copy " +
		"afterwards, as background work that yields to clients. The last column is what the kernel reclaimed while each pass ran, " +
		"by kswapd and by allocations that stalled to reclaim, and the memory free as it began (/proc/vmstat, /proc/meminfo): " +
		"work for the whole machine that no process's CPU time shows.\n\n")
	b.WriteString("| target | round | objects | conc | save | quiet ops/s | during the fill | during / quiet | CPU per GET quiet / during | memory reclaimed quiet / during |\n" +
		"|---|---:|---|---:|---|---:|---:|---:|---|---|\n")
	ratios := map[string][]float64{}
	var order []string
	for _, f := range r.fills {
		q, d := f.quiet.cpu.perGet(f.quiet.n), f.during.cpu.perGet(f.during.n)
		fmt.Fprintf(b, "| %s | %d | %s | %d | %s in %.1f s | %.0f | %.0f | %.2fx | %s / %s | %s / %s |\n", f.target, f.round, f.quiet.set, f.quiet.conc,
			mib(f.saved), f.save.Seconds(), f.quiet.opsPerSec(), f.during.opsPerSec(), f.ratio(),
			us(q.server), us(d.server), f.quietReclaim, f.duringReclaim)
		if _, seen := ratios[f.target]; !seen {
			order = append(order, f.target)
		}
		ratios[f.target] = append(ratios[f.target], f.ratio())
	}
	b.WriteString("\nDuring / quiet, the median of the rounds (their range):")
	for i, t := range order {
		if i > 0 {
			b.WriteString(";")
		}
		fmt.Fprintf(b, " %s %s, %d rounds)", t, spreadOf(ratios[t]), len(ratios[t]))
	}
	b.WriteString(".\n\n")
}
