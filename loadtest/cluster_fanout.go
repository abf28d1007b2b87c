// The cluster scenario's fan-out part: one checkpoint restored cold by
// one node alone, then by three nodes of a cluster at once (each reading
// the whole checkpoint through itself, as the ranks of a job spread over
// the nodes do), from the slow origin. A cluster reads each chunk from
// the origin once, so three restores should cost the link one
// checkpoint, and each should go at the lone restore's pace.
package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Layouts of the fan-out part.
const (
	fanAlone   = "one node restores alone"
	fanCluster = "3 nodes restore at once"
)

// fanRow is one restore of the fan-out part: one node's.
type fanRow struct {
	layout string
	node   string
	stats  readStats
	// linkBytes is what the layout's restores (all of them) read over
	// the slow link.
	linkBytes int64
}

// fanout measures the lone restore, then the three at once, each on
// fresh nodes with RAM for the checkpoint.
func (r *clusterRun) fanout(ctx context.Context) error {
	obj := r.objs.fanout
	ram := 2*int64(len(obj.data)) + 256<<20
	for _, l := range []struct {
		layout string
		nodes  int
	}{{fanAlone, 1}, {fanCluster, len(clusterIDs)}} {
		rows, err := r.fanLayout(ctx, l.layout, l.nodes, ram)
		if err != nil {
			return fmt.Errorf("%s: %w", l.layout, err)
		}
		for _, row := range rows {
			r.logf("%-26s %s %8.0f MB/s in %v, the layout's link bytes %s", row.layout, row.node, row.stats.mbPerSec(),
				row.stats.elapsed.Round(time.Millisecond), mib(row.linkBytes))
		}
		r.rep.fanout = append(r.rep.fanout, rows...)
	}
	return nil
}

// fanLayout starts nodes fresh nodes and has each restore the checkpoint
// at once, in chunk-sized ranges, rangeConc in flight.
func (r *clusterRun) fanLayout(ctx context.Context, layout string, nodes int, ram int64) ([]fanRow, error) {
	ns, err := startNodes(ctx, nodes, r.bin, r.proxy.Addr(), r.mio.AccessKey, r.mio.SecretKey, ram, r.plan.disk, nodes > 1,
		"--freshness", "immutable")
	if err != nil {
		return nil, err
	}
	defer ns.stop()
	clients := make([]*client, nodes)
	for i, g := range ns.nodes {
		clients[i] = newClient(target{name: ns.ids[i], endpoint: g.endpoint(), access: granaryAccess, secret: granarySecret}, clusterBucket, 64)
		defer clients[i].close()
	}
	_, down0 := r.proxy.Forwarded()
	rows := make([]fanRow, nodes)
	errs := make([]error, nodes)
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reads := ranges(r.objs.fanout, i)
			rows[i] = fanRow{layout: layout, node: ns.ids[i]}
			rows[i].stats, errs[i] = runReads(ctx, clients, reads, r.plan.rangeConc)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("node %s: %w\n%s", ns.ids[i], err, ns.tails())
		}
	}
	_, down1 := r.proxy.Forwarded()
	for i := range rows {
		rows[i].linkBytes = down1 - down0
	}
	return rows, nil
}

// ranges reads o through node in chunk-aligned ranges of one chunk, in
// order.
func ranges(o object, node int) []hopRead {
	var reads []hopRead
	for off := int64(0); off < int64(len(o.data)); off += clusterChunk {
		reads = append(reads, hopRead{node: node, key: o.key, off: off, want: o.data[off:min(off+clusterChunk, int64(len(o.data)))]})
	}
	return reads
}

// fanTable renders the fan-out part.
func (r *clusterReport) fanTable(b *strings.Builder) {
	size := r.plan.fanoutSize
	fmt.Fprintf(b, "## Fan-out: one checkpoint restored by three nodes at once\n\nA checkpoint of %s, cold, read by each node "+
		"in ranges of one chunk (%s), %d in flight, through the slow origin: first by one node alone, then by the three "+
		"nodes of a cluster at once, each reading the whole checkpoint through itself. Fresh nodes for each layout.\n\n",
		sizeName(size), sizeName(clusterChunk), r.plan.rangeConc)
	b.WriteString("| layout | node | restore time | MB/s | vs the lone restore | origin link bytes / checkpoint |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|\n")
	var lone float64
	for _, row := range r.fanout {
		if row.layout == fanAlone {
			lone = row.stats.mbPerSec()
		}
		ratio := "-"
		if lone > 0 {
			ratio = fmt.Sprintf("%.2fx", row.stats.mbPerSec()/lone)
		}
		fmt.Fprintf(b, "| %s | %s | %s | %.0f | %s | %.2f |\n", row.layout, row.node, ms(row.stats.elapsed),
			row.stats.mbPerSec(), ratio, float64(row.linkBytes)/float64(size))
	}
	b.WriteString("\nThe link bytes of the three restores at once are their sum: the cluster reads each chunk from the origin " +
		"once, and the nodes that do not own a chunk ask its owner, joining its fill.\n\n")
}
