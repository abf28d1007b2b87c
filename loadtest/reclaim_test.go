// The reclaim counters: taken from /proc/vmstat's and /proc/meminfo's
// text, subtracted over a pass, and read from this machine's /proc.
package main

import "testing"

func TestReclaimParsesAndSubtracts(t *testing.T) {
	start := parseVMStat("nr_free_pages 100\npgsteal_kswapd 1000\npgsteal_direct 20\nallocstall_normal 3\nallocstall_movable 4\npgscan_kswapd 5000\n")
	start.free = parseMemFree("MemTotal:       24683656 kB\nMemFree:          262144 kB\nMemAvailable:   23854024 kB\n")
	end := parseVMStat("pgsteal_kswapd 1512\npgsteal_direct 52\nallocstall_normal 4\nallocstall_movable 9\n")
	want := reclaim{kswapd: 512, direct: 32, stalls: 6, free: 256 << 20, ok: true}
	if got := end.sub(start); got != want {
		t.Fatalf("growth %+v, want %+v", got, want)
	}
	if got := end.sub(reclaim{}); got.ok || got.String() != "-" {
		t.Errorf("growth from unread counters %+v (%q), want none and a dash", got, got.String())
	}
	if got := parseMemFree("MemTotal: 1 kB\n"); got != 0 {
		t.Errorf("MemFree absent: %d, want 0", got)
	}
}

func TestReclaimReadsThisMachine(t *testing.T) {
	r := readReclaim()
	if !r.ok || r.free <= 0 || r.kswapd < 0 || r.direct < 0 || r.stalls < 0 {
		t.Fatalf("counters %+v: want them read, with the memory free", r)
	}
}
