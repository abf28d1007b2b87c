// The kernel's memory reclaim over a pass (/proc/vmstat, /proc/meminfo):
// a pass that runs while the kernel frees page cache for new memory (a
// cache filling its tiers, a save's copies landing) shares the machine
// with that work, which no process's CPU time shows. The fill table
// reports it beside each pass so its ratio can be read.
package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// pageSize is the unit /proc/vmstat counts pages in.
var pageSize = int64(os.Getpagesize())

// reclaim is the kernel's reclaim counters at one moment, or their
// growth over a pass (sub).
type reclaim struct {
	kswapd int64 // pages kswapd reclaimed (pgsteal_kswapd)
	direct int64 // pages allocating processes reclaimed themselves (pgsteal_direct)
	stalls int64 // allocations that stalled to reclaim (allocstall_*)
	free   int64 // bytes free (MemFree) at the moment; kept, not subtracted
	ok     bool  // the counters could be read
}

// readReclaim reads the counters now; ok is false where /proc cannot be
// read (the table then shows a dash).
func readReclaim() reclaim {
	vm, err := os.ReadFile("/proc/vmstat")
	if err != nil {
		return reclaim{}
	}
	r := parseVMStat(string(vm))
	if mem, err := os.ReadFile("/proc/meminfo"); err == nil {
		r.free = parseMemFree(string(mem))
	}
	return r
}

// parseVMStat takes the reclaim counters from /proc/vmstat's text.
func parseVMStat(text string) reclaim {
	r := reclaim{ok: true}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(val, 10, 64)
		if err != nil {
			continue
		}
		switch {
		case name == "pgsteal_kswapd":
			r.kswapd = n
		case name == "pgsteal_direct":
			r.direct = n
		case strings.HasPrefix(name, "allocstall_"):
			r.stalls += n
		}
	}
	return r
}

// parseMemFree returns MemFree from /proc/meminfo's text, in bytes (0 if
// absent).
func parseMemFree(text string) int64 {
	for line := range strings.Lines(text) {
		rest, ok := strings.CutPrefix(line, "MemFree:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return 0
		}
		kib, _ := strconv.ParseInt(f[0], 10, 64)
		return kib << 10
	}
	return 0
}

// sub is the counters' growth from start to r, with the free memory at
// start.
func (r reclaim) sub(start reclaim) reclaim {
	if !r.ok || !start.ok {
		return reclaim{}
	}
	return reclaim{kswapd: r.kswapd - start.kswapd, direct: r.direct - start.direct,
		stalls: r.stalls - start.stalls, free: start.free, ok: true}
}

// String renders a pass's growth: the memory reclaimed by kswapd and by
// stalled allocations, and the memory free when the pass began.
func (r reclaim) String() string {
	if !r.ok {
		return "-"
	}
	return fmt.Sprintf("%s + %s in %d stalls (%s free)", mib(r.kswapd*pageSize), mib(r.direct*pageSize), r.stalls, mib(r.free))
}
