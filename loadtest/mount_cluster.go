// The mount-cluster scenario: warm files read through `granary mount` in
// front of one node that holds the whole set, and in front of a
// three-node cluster whose nodes each hold their third: with the mount
// reading each chunk from its owner (one request per read, whichever node
// it was pointed at), and through its node only (--via-endpoint-only: a
// peer hop for two chunks in three). Each measured pass is a fresh mount,
// since a read-only mount's kernel page cache would answer a second pass
// itself; before it, an untimed pass through another mount warms the
// nodes. A row counts the CPU of the nodes and the mount per file, which
// on one machine says what a read costs better than throughput does.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/granary-dev/granary/internal/miniotest"
)

// The layouts of the mount-cluster scenario, in the report's order.
const (
	mcAlone  = "one node holding the set"
	mcOwners = "3 nodes, the mount reads each chunk from its owner"
	mcVia    = "3 nodes, the mount reads through one node (--via-endpoint-only)"
)

// mcRow is one measured pass.
type mcRow struct {
	layout    string
	small     readStats // the small files, whole, in random order
	large     readStats // the large file, sequentially
	cpu       time.Duration
	peerReads float64
}

// mcReport is the scenario's result.
type mcReport struct {
	plan                 mountPlan
	quick                bool
	started              time.Time
	rows                 []mcRow
	aloneRAM, clusterRAM int64
	set                  int64 // bytes of the data set
	loadStart, loadEnd   string
}

// mcRun is one mount-cluster scenario in progress.
type mcRun struct {
	d    *mountData
	bin  string
	mio  *miniotest.Server
	dir  string
	rep  *mcReport
	logf func(string, ...any)
	pass int // mounts made so far, to name their directories
}

// runMountCluster measures the scenario with the granary binary of o.
func runMountCluster(ctx context.Context, o options, logw io.Writer) (*mcReport, error) {
	if o.granary == "" {
		return nil, errors.New("the mount-cluster scenario needs a granary binary (-granary)")
	}
	if err := mountSupport(o.granary); err != nil {
		return nil, err
	}
	p := fullMountPlan()
	if o.quick {
		p = quickMountPlan()
	}
	logf := func(format string, args ...any) { fmt.Fprintf(logw, "loadtest: mount-cluster: "+format+"\n", args...) }
	mio, err := startMinio()
	if err != nil {
		return nil, err
	}
	defer mio.Stop()
	dir, err := mountTempDir("granary-mount-cluster-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	r := &mcRun{d: newMountData(p), bin: o.granary, mio: mio, dir: dir, logf: logf,
		rep: &mcReport{plan: p, quick: o.quick, started: time.Now()}}
	if err := seedMinio(ctx, r.d.dataset(), mio, logf); err != nil {
		return nil, err
	}
	set := int64(p.files*p.fileSize) + p.largeSize
	r.rep.aloneRAM = 2*set + 256<<20
	// A third of the set and a quarter to spare, and room for the
	// working memory of 8 MiB chunks.
	r.rep.clusterRAM = max((set/3+set/12)*8/7, 256<<20)
	r.rep.set = set
	r.rep.loadStart = loadAverage()
	if err := r.layout(ctx, 1, r.rep.aloneRAM, mcAlone); err != nil {
		return nil, err
	}
	if err := r.layout(ctx, len(clusterIDs), r.rep.clusterRAM, mcOwners, mcVia); err != nil {
		return nil, err
	}
	r.rep.loadEnd = loadAverage()
	return r.rep, nil
}

// layout starts nodes nodes with ram each, warms them through a mount
// that reads from the owners, and measures one fresh mount per layout
// name (mcVia mounts with --via-endpoint-only).
func (r *mcRun) layout(ctx context.Context, nodes int, ram int64, names ...string) error {
	ns, err := startNodes(ctx, nodes, r.bin, r.mio.Endpoint, r.mio.AccessKey, r.mio.SecretKey, ram, 0, nodes > 1,
		"--freshness", "immutable")
	if err != nil {
		return err
	}
	defer ns.stop()
	endpoint := ns.nodes[0].endpoint()
	if err := r.mounted(endpoint, nil, func(mnt string, _ *mountProc) error {
		_, _, err := r.readAll(ctx, mnt)
		return err
	}); err != nil {
		return fmt.Errorf("warming %s: %w\n%s", names[0], err, ns.tails())
	}
	for _, name := range names {
		var flags []string
		if name == mcVia {
			flags = []string{"--via-endpoint-only"}
		}
		if err := r.measure(ctx, ns, endpoint, name, flags); err != nil {
			return fmt.Errorf("%s: %w\n%s", name, err, ns.tails())
		}
	}
	return nil
}

// measure reads every file once through a fresh mount of endpoint.
func (r *mcRun) measure(ctx context.Context, ns *nodeSet, endpoint, name string, flags []string) error {
	return r.mounted(endpoint, flags, func(mnt string, m *mountProc) error {
		before, err := ns.served(ctx)
		if err != nil {
			return err
		}
		cpu0, err := mcCPU(ns, m)
		if err != nil {
			return err
		}
		small, large, err := r.readAll(ctx, mnt)
		if err != nil {
			return err
		}
		cpu1, err := mcCPU(ns, m)
		if err != nil {
			return err
		}
		after, err := ns.served(ctx)
		if err != nil {
			return err
		}
		row := mcRow{layout: name, small: small, large: large, cpu: cpu1 - cpu0, peerReads: after.minus(before).peerReads}
		r.logf("%-64s %8.0f files/s %8.0f MB/s large, cpu/file %v, peer chunk reads %.0f", name, small.opsPerSec(),
			large.mbPerSec(), row.cpuPerFile().Round(time.Microsecond), row.peerReads)
		r.rep.rows = append(r.rep.rows, row)
		return nil
	})
}

// mcCPU is the CPU the nodes and the mount process have used.
func mcCPU(ns *nodeSet, m *mountProc) (time.Duration, error) {
	nodes, err := ns.cpu()
	if err != nil {
		return 0, err
	}
	mount, err := procCPU(m.cmd.Process.Pid)
	return nodes + mount, err
}

// mounted mounts the bucket of endpoint read-only at a new directory,
// runs f on it and unmounts.
func (r *mcRun) mounted(endpoint string, flags []string, f func(mnt string, m *mountProc) error) error {
	r.pass++
	mnt, logPath, err := mountDirs(r.dir, fmt.Sprintf("mnt-%d", r.pass))
	if err != nil {
		return err
	}
	m, err := startMount(r.bin, endpoint, granaryAccess, granarySecret, mountBucket, mnt, logPath, r.rep.plan.maxMemory,
		append([]string{"--read-only"}, flags...)...)
	if err != nil {
		return err
	}
	defer m.stop()
	if err := f(mnt, m); err != nil {
		return fmt.Errorf("%w\ngranary mount log tail:\n%s", err, m.tail())
	}
	return m.stop()
}

// readAll reads the small files in random order by the plan's readers,
// then the large file sequentially, checking every byte.
func (r *mcRun) readAll(ctx context.Context, mnt string) (small, large readStats, err error) {
	p := r.rep.plan
	elapsed, verified, err := readRandom(ctx, r.d.small, p.readers, 7, openFileUnder(mnt))
	if err != nil {
		return small, large, err
	}
	small = readStats{reads: verified, bytes: int64(verified * p.fileSize), elapsed: elapsed}
	d, err := readSeqFile(mnt, r.d.large)
	large = readStats{reads: 1, bytes: p.largeSize, elapsed: d}
	return small, large, err
}

func (m mcRow) cpuPerFile() time.Duration {
	if m.small.reads == 0 {
		return 0
	}
	return m.cpu / time.Duration(m.small.reads+1)
}

// markdown renders the report.
func (r *mcReport) markdown() string {
	var b strings.Builder
	p := r.plan
	fmt.Fprintf(&b, "# Granary mount in front of a cluster\n\n%s. %d files of %s read whole in random order by %d readers, "+
		"then one file of %s sequentially, through a fresh read-only `granary mount` (--max-memory %s) after an untimed "+
		"pass through another mount warmed the nodes. The set: %s. One node: --ram %s. Three nodes (static --peers): "+
		"--ram %s each (its RAM tier is 7/8 of that). Origin: MinIO on loopback. CPU: the nodes' and the "+
		"mount's, per file (the large one counted as one). Load average (1 min) %s before, %s after.\n\n",
		runStamp(r.started, r.quick), p.files, sizeName(int64(p.fileSize)), p.readers, sizeName(p.largeSize), mib(p.maxMemory),
		mib(r.set), mib(r.aloneRAM), mib(r.clusterRAM), r.loadStart, r.loadEnd)
	b.WriteString("| layout | small files/s | vs one node | large file MB/s | vs one node | CPU per file | peer chunk reads |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|\n")
	base := r.rows[0]
	for _, row := range r.rows {
		fmt.Fprintf(&b, "| %s | %.0f | %.2fx | %.0f | %.2fx | %d µs | %.0f |\n", row.layout, row.small.opsPerSec(),
			row.small.opsPerSec()/base.small.opsPerSec(), row.large.mbPerSec(), row.large.mbPerSec()/base.large.mbPerSec(),
			row.cpuPerFile().Microseconds(), row.peerReads)
	}
	b.WriteString("\nThe mount reading from the owners makes one request per chunk, as against one node; through one node, " +
		"a chunk that node does not own costs a peer hop (a second request and the answer authenticated on both sides). " +
		"All processes share this machine's cores.\n")
	return b.String()
}
