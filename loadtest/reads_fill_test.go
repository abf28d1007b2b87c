// The reads report's table of warm reads while a checkpoint lands: the
// ratio of the during-a-fill pass to the quiet one and the CPU per GET,
// from made-up results; and the nginx configuration's open-file cache,
// which must leave a worker room for its connections.
package main

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestFillTable(t *testing.T) {
	pass := func(ops float64, cpu time.Duration) smallResult {
		r := smallResult{set: "100KiB", conc: 64, n: 10000, elapsed: time.Duration(float64(time.Second) * 10000 / ops)}
		r.cpu.server = cpu * 10000
		return r
	}
	calm := reclaim{free: 900 << 20, ok: true}
	busy := reclaim{kswapd: 65536, direct: 2560, stalls: 7, free: 240 << 20, ok: true}
	// nginx and granary rounds, each cache's quiet pass and CPU the same
	// in every round, and the saves as in a run.
	nginx := func(round int, during float64) fillResult {
		return fillResult{target: "nginx", round: round, saved: 1 << 30, save: 4200 * time.Millisecond,
			quiet: pass(13000, 44*time.Microsecond), during: pass(during, 46*time.Microsecond), quietReclaim: calm, duringReclaim: calm}
	}
	granary := func(round int, during float64, duringReclaim reclaim) fillResult {
		return fillResult{target: "granary", round: round, saved: 1 << 30, save: 6700 * time.Millisecond,
			quiet: pass(10000, 70*time.Microsecond), during: pass(during, 78*time.Microsecond), quietReclaim: calm, duringReclaim: duringReclaim}
	}
	rep := &report{fills: []fillResult{nginx(1, 12870), granary(1, 9100, busy), granary(2, 7000, calm), nginx(2, 13000),
		nginx(3, 11700), granary(3, 9500, calm)}}
	var b strings.Builder
	rep.fillTable(&b)
	for _, want := range []string{
		"| nginx | 1 | 100KiB | 64 | 1024 MiB in 4.2 s | 13000 | 12870 | 0.99x | 44 µs / 46 µs | 0 MiB + 0 MiB in 0 stalls (900 MiB free) / 0 MiB + 0 MiB in 0 stalls (900 MiB free) |",
		"| granary | 1 | 100KiB | 64 | 1024 MiB in 6.7 s | 10000 | 9100 | 0.91x | 70 µs / 78 µs | 0 MiB + 0 MiB in 0 stalls (900 MiB free) / " +
			fmt.Sprintf("%s + %s in 7 stalls (240 MiB free) |", mib(65536*pageSize), mib(2560*pageSize)),
		// The median, not the mean (0.89x) nor the worst round, with the range.
		"During / quiet, the median of the rounds (their range): nginx 0.99x (0.90-1.00x, 3 rounds); granary 0.91x (0.70-0.95x, 3 rounds).",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	var none strings.Builder
	(&report{}).fillTable(&none)
	if none.Len() != 0 {
		t.Errorf("a report without fills has a fill table:\n%s", none.String())
	}
}

func TestOpenFilesLeaveRoomForConnections(t *testing.T) {
	limit := noFileLimit()
	for _, objects := range []int{10, 300, 40_002, 1_000_000} {
		n := openFiles(objects)
		if n > 2*objects && n > 256 {
			t.Errorf("%d objects: open_file_cache %d, more than twice the objects", objects, n)
		}
		if limit > 2*workerConnections+1024+256 && n+2*workerConnections > limit {
			t.Errorf("%d objects: open_file_cache %d leaves a worker no room for %d connections under its limit %d",
				objects, n, 2*workerConnections, limit)
		}
	}
}
