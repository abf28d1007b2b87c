// The budgets against what the machine gives: a start-up warning when
// --disk exceeds the room on the data directory's filesystem or --ram
// exceeds the cgroup's memory limit, and gauges of both limits so that
// alerts can watch the pressure while the node runs.
package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// cgroupRoot is where the kernel mounts the cgroup hierarchy.
const cgroupRoot = "/sys/fs/cgroup"

// cgroupV1Unlimited: cgroup v1 writes "no limit" as a page-rounded
// 2^63-1; any limit at or above it is none.
const cgroupV1Unlimited = 1 << 62

// memoryLimit returns the memory limit of the cgroup mounted at root:
// cgroup v2's memory.max, else v1's memory/memory.limit_in_bytes. ok is
// false when there is no limit or no file to read it from.
func memoryLimit(root string) (limit int64, ok bool) {
	for _, name := range []string{"memory.max", filepath.Join("memory", "memory.limit_in_bytes")} {
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			continue
		}
		s := strings.TrimSpace(string(b))
		if s == "max" {
			return 0, false
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 || n >= cgroupV1Unlimited {
			return 0, false
		}
		return n, true
	}
	return 0, false
}

// fsFree returns the bytes an unprivileged writer may still use on the
// filesystem that holds path.
func fsFree(path string) (int64, error) {
	var s syscall.Statfs_t
	if err := syscall.Statfs(path, &s); err != nil {
		return 0, err
	}
	return int64(s.Bavail) * int64(s.Bsize), nil
}

// budgetRoom is what the machine gives the budgets: the disk room (free
// bytes plus what the disk tier already holds, which it may reuse) and
// the memory limit (0: none known).
type budgetRoom struct {
	diskRoom int64
	memLimit int64
}

// budgetWarnings returns one sentence per budget the room cannot hold.
// A zero budget (the tier off) or a zero room (unknown) warns of nothing.
func budgetWarnings(disk, ram Size, room budgetRoom) []string {
	var w []string
	if disk > 0 && room.diskRoom > 0 && int64(disk) > room.diskRoom {
		w = append(w, "--disk "+disk.String()+" exceeds the "+humanBytes(room.diskRoom)+
			" the data directory's filesystem has room for: the disk tier will fail writes when the filesystem fills, before it evicts; lower --disk")
	}
	if ram > 0 && room.memLimit > 0 && int64(ram) > room.memLimit {
		w = append(w, "--ram "+ram.String()+" exceeds the container's memory limit of "+humanBytes(room.memLimit)+
			": the kernel will kill the node before the RAM tier fills; lower --ram below the limit, leaving room for the process itself")
	}
	return w
}

// warnBudgets logs budgetWarnings for cfg; the disk tiers are asked what
// they hold already.
func warnBudgets(cfg Config, tiers nodeTiers, log zerolog.Logger) {
	var room budgetRoom
	room.memLimit, _ = memoryLimit(cgroupRoot)
	if tiers.disk != nil {
		if free, err := fsFree(cfg.DataDir); err == nil {
			room.diskRoom = free + tiers.diskUsed()
		}
	}
	for _, w := range budgetWarnings(cfg.Disk, cfg.RAM, room) {
		log.Warn().Msg(w)
	}
}

// resourceCollectors are the gauges of the limits: the cgroup's memory
// limit (0 without one) and the free bytes of the data directory's
// filesystem (where the disk tier, write-back and the index live).
func resourceCollectors(dataDir string) []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "granary_memory_limit_bytes",
			Help: "The container's (cgroup's) memory limit; 0 when there is none."},
			func() float64 { n, _ := memoryLimit(cgroupRoot); return float64(n) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "granary_data_dir_free_bytes",
			Help: "Bytes free on the data directory's filesystem (disk tier, write-back staging, index)."},
			func() float64 { n, _ := fsFree(dataDir); return float64(n) }),
	}
}
