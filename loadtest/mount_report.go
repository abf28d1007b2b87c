// The mount scenario's markdown report: one row per timed read, its ratio
// to the local disk, the mount's peak RSS and the targets.
package main

import (
	"fmt"
	"strings"
	"time"
)

// The rows' kinds and targets.
const (
	kindSeq   = "sequential"
	kindSmall = "small files"

	targetLocalCold   = "local disk, cold (page cache dropped)"
	targetLocalWarm   = "local disk, warm"
	targetMountCold   = "mount, cold (first read: granary misses too)"
	targetMountWarm   = "mount, warm (second read)"
	targetGatewayWarm = "S3 GET from the gateway, warm"
	targetRWFirst     = "read-write mount, first read (granary warm)"
	targetRWWarm      = "read-write mount, warm (second read)"
	targetExpiredWarm = "mount, warm, metadata expired (--metadata-ttl 1s)"
)

// mountRow is one timed pass: the large file read once, or every small
// file read once.
type mountRow struct {
	kind     string // kindSeq or kindSmall
	target   string
	bytes    int64
	files    int
	verified int // files whose every byte was compared with what was written (in every run)
	runs     int // times the pass was made; elapsed is the median run
	elapsed  time.Duration
}

func (r mountRow) mbPerSec() float64 { return float64(r.bytes) / 1e6 / r.elapsed.Seconds() }

func (r mountRow) filesPerSec() float64 { return float64(r.files) / r.elapsed.Seconds() }

// speed is the row's figure of merit: MB/s or files/s.
func (r mountRow) speed() float64 {
	if r.kind == kindSmall {
		return r.filesPerSec()
	}
	return r.mbPerSec()
}

// mountReport collects a mount run's results.
type mountReport struct {
	plan               mountPlan
	quick              bool
	started            time.Time
	rows               []mountRow
	cacheDropped       bool   // the cold local row ran on an emptied page cache
	peakRSS            int64  // the mount process's VmHWM
	mountpoint         string // where the bucket was mounted
	unmounted          bool   // SIGTERM: exit 0 and the mountpoint gone
	unmountErr         error
	loadStart, loadEnd string         // as in report
	crash              []*crashReport // one per crashModes
	save               *mountSave     // the save row; nil: not run
}

// find returns the row of kind and target, or a zero row.
func (r *mountReport) find(kind, target string) mountRow {
	for _, row := range r.rows {
		if row.kind == kind && row.target == target {
			return row
		}
	}
	return mountRow{}
}

// baseline is the local disk row a row compares with: the cold one for
// a cold sequential read, else the warm one.
func (r *mountReport) baseline(row mountRow) mountRow {
	if row.kind == kindSeq && (row.target == targetMountCold || row.target == targetLocalCold) {
		return r.find(kindSeq, targetLocalCold)
	}
	return r.find(row.kind, targetLocalWarm)
}

// rssLimit is the bound on the mount's peak RSS.
func (r *mountReport) rssLimit() int64 { return r.plan.maxMemory + 64<<20 }

func (r *mountReport) markdown() string {
	var b strings.Builder
	p := r.plan
	fmt.Fprintf(&b, "# Granary mount (FUSE sidecar) against local disk\n\n")
	b.WriteString(runStamp(r.started, r.quick))
	fmt.Fprintf(&b, ". Same run, same data: one %s file and %d files of %s (random bytes), in a MinIO bucket "+
		"served by `granary serve`, mounted with `granary mount --read-only --max-memory %s` (a training set's mount; the read-write rows mount it again without --read-only), and written to a local directory "+
		"on the same disk. The large file is read sequentially in %s reads; the small files are each read whole, "+
		"in a random order, by %d parallel readers. The gateway rows read the same objects with minio-go GetObject. "+
		"Every byte read in every row is compared with what was written. Load average (1 min) %s before, %s after.\n\n",
		sizeName(p.largeSize), p.files, sizeName(int64(p.fileSize)), sizeName(p.maxMemory), sizeName(seqBufSize),
		p.readers, r.loadStart, r.loadEnd)
	b.WriteString("| read | target | speed | seconds | vs local disk | files verified | runs |\n|---|---|---:|---:|---:|---:|---:|\n")
	for _, row := range r.rows {
		speed := fmt.Sprintf("%.0f MB/s", row.mbPerSec())
		if row.kind == kindSmall {
			speed = fmt.Sprintf("%.0f files/s", row.filesPerSec())
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %.3f | %s | %d/%d | %d |\n", row.kind, row.target, speed,
			row.elapsed.Seconds(), ratio(row.speed(), r.baseline(row).speed()), row.verified, row.files, row.runs)
	}
	fmt.Fprintf(&b, "\nRatios compare with the local disk at the same temperature: cold sequential rows with the cold local read, the others with the warm one. "+
		"A warm sequential row is the median of %d reads (the first of them the second read of the file); a warm small-file row (but the metadata-expired one) the median of %d passes in different random orders; every other row is one pass. "+
		"The local disk's small-file row follows one untimed pass that reads the files into the page cache. "+
		"Before its first small-file pass the mount lists the files' directory once, untimed, as a data set's index does. "+
		"The mount runs with its default --metadata-ttl (1m), so the warm pass finds names and attributes in the kernel's caches. "+
		"The metadata-expired row mounts again with --metadata-ttl 1s and waits 1.5s after an untimed first pass: the kernel then asks the mount about every name "+
		"(answered from the directory's listing, which the mount refreshes in the background while it is in use), as in an epoch longer than the TTL. "+
		"A read-only mount opens files without a round trip to the mount process; a read-write one sends an open and a release per file. "+
		"The read-write and metadata-expired rows follow the main mount's rows, with the node warm.\n", warmSeqRuns, warmSmallRuns)
	if r.cacheDropped {
		b.WriteString("The cold local read follows `echo 3 > /proc/sys/vm/drop_caches` (the only place the page cache is dropped; " +
			"it also empties the cache of MinIO's files, so the mount's cold read reaches MinIO's disk too; in a virtual machine the host may still cache the disk). " +
			"The mount's warm rows may be served by the kernel's page cache, which the mount keeps across opens.\n\n")
	} else {
		b.WriteString("**The page cache could not be dropped (not root): the cold local row is not cold.**\n\n")
	}
	r.targets(&b)
	if r.save != nil {
		r.save.markdown(&b)
	}
	if len(r.crash) > 0 {
		crashMarkdown(&b, r.crash, r.plan.readers)
	}
	fmt.Fprintf(&b, "## Memory and unmount\n\ngranary mount peak RSS (VmHWM) %s with --max-memory %s (limit %s). ",
		mib(r.peakRSS), mib(r.plan.maxMemory), mib(r.rssLimit()))
	if r.unmounted {
		b.WriteString("SIGTERM unmounted it cleanly (exit 0, mountpoint gone).\n")
	} else {
		fmt.Fprintf(&b, "**Unmount on SIGTERM failed: %v**\n", r.unmountErr)
	}
	return b.String()
}

// targets renders the goals against the measurements.
func (r *mountReport) targets(b *strings.Builder) {
	b.WriteString("## The issue's targets\n\n| goal | measured | target | met |\n|---|---:|---:|---|\n")
	goal := func(name string, got float64, measured, target string, ok bool) {
		met := map[bool]string{true: "yes", false: "**no**"}[ok]
		if got <= 0 {
			met, measured = "n/a", "n/a"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", name, measured, target, met)
	}
	speedRatio := func(kind string) float64 {
		row, base := r.find(kind, targetMountWarm), r.find(kind, targetLocalWarm)
		if row.elapsed <= 0 || base.elapsed <= 0 {
			return 0
		}
		return row.speed() / base.speed()
	}
	s := speedRatio(kindSeq)
	goal("warm sequential read through the mount", s, fmt.Sprintf("%.2fx local disk", s), "≥ 0.7x local disk", s >= 0.7)
	s = speedRatio(kindSmall)
	goal("small files through the mount (warm pass)", s, fmt.Sprintf("%.2fx local disk", s), "≥ 0.5x local disk", s >= 0.5)
	goal("peak RSS of the mount", float64(r.peakRSS), mib(r.peakRSS), "≤ "+mib(r.rssLimit()), r.peakRSS <= r.rssLimit())
	for _, c := range r.crash {
		p99 := pct(c.pauses, 99)
		goal("a reader's pause across a worker crash, p99 ("+c.mode+")", p99.Seconds(), p99.String(), "< 1s", len(c.pauses) > 0 && p99 < time.Second)
		goal("reads failed across the crashes ("+c.mode+")", float64(c.reads), fmt.Sprintf("%d of %d", c.failed, c.reads), "0", c.failed == 0)
	}
	b.WriteString("\n")
}
