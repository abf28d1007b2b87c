// The cluster scenario's scaling part: a data set that fits the cluster's
// RAM and not one node's, read through every node at once, against one
// node alone whose RAM holds it all. Each pass reads every object through
// every node (each node its own shuffled order, all nodes at once), as a
// training job whose workers are spread over the nodes does; the first
// pass fills from the origin, the later ones are warm. On one machine the
// nodes share its cores, so throughput says little; the nodes' CPU per
// read says what a read costs the cluster, which is what limits a cluster
// on cores of its own.
package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Layouts of the scaling part.
const (
	scaleAlone   = "one node alone, RAM holds the set"
	scaleCluster = "3 nodes, the set fits the cluster, not one node"
	scaleEvery   = "3 nodes, each with RAM for the whole set"
	scaleRouted  = "3 nodes, the set fits the cluster, reads redirected to owners"
	scaleRing    = "3 nodes, the set fits the cluster, clients place reads by the ring"
)

// routing is how a layout's clients reach the owners.
type routing int

const (
	viaNode    routing = iota // as any S3 client: the node it is pointed at serves
	byRedirect                // X-Granary-Route: owner, each redirect followed
	byRing                    // each read sent to its owner by the ring call, redirects followed
)

// scaleRow is one pass of the scaling part.
type scaleRow struct {
	layout string
	pass   int // 1 is the first (cold) pass
	stats  readStats
	served servedCounts
	// nodeCPU is the CPU time every node of the layout used over the
	// pass, faults the minor page faults they took.
	nodeCPU time.Duration
	faults  int64
}

func (s scaleRow) faultsPerRead() float64 {
	if s.stats.reads == 0 {
		return 0
	}
	return float64(s.faults) / float64(s.stats.reads)
}

func (s scaleRow) perRead() time.Duration {
	if s.stats.reads == 0 {
		return 0
	}
	return s.nodeCPU / time.Duration(s.stats.reads)
}

// scaleRAM is --ram for the scaling part's cluster nodes: a RAM tier
// (--ram less an eighth) that holds a node's third of the set with a
// quarter to spare (hot copies get the spare), and so less than the whole
// set. The node alone gets room for all of it.
func (p clusterPlan) scaleRAM() (cluster, alone int64) {
	set := int64(p.scaleCount) * int64(p.scaleSize)
	third := set/3 + set/12
	cluster = third * 8 / 7
	return max(cluster, 64<<20), set*2 + 256<<20
}

// scaling measures the passes of one node alone, then of the cluster:
// read as any S3 client reads it, and with owner routing.
func (r *clusterRun) scaling(ctx context.Context) error {
	clusterRAM, aloneRAM := r.plan.scaleRAM()
	r.rep.scaleRAM, r.rep.scaleAloneRAM = clusterRAM, aloneRAM
	n := len(clusterIDs)
	for _, l := range []struct {
		layout string
		nodes  int
		ram    int64
		route  routing
	}{{scaleAlone, 1, aloneRAM, viaNode}, {scaleCluster, n, clusterRAM, viaNode}, {scaleEvery, n, aloneRAM, viaNode},
		{scaleRouted, n, clusterRAM, byRedirect}, {scaleRing, n, clusterRAM, byRing}} {
		if err := r.scaleLayout(ctx, l.layout, l.nodes, l.ram, l.route); err != nil {
			return fmt.Errorf("%s: %w", l.layout, err)
		}
	}
	return nil
}

// scalePasses is how many times each layout reads the set.
const scalePasses = 3

// scaleLayout starts fresh nodes and measures their passes, the clients
// reaching the owners as route says.
func (r *clusterRun) scaleLayout(ctx context.Context, layout string, nodes int, ram int64, route routing) error {
	ns, err := startNodes(ctx, nodes, r.bin, r.proxy.Addr(), r.mio.AccessKey, r.mio.SecretKey, ram, r.plan.disk, nodes > 1,
		"--freshness", "immutable")
	if err != nil {
		return err
	}
	defer ns.stop()
	clients := make([]*client, nodes)
	for i, g := range ns.nodes {
		t := target{name: ns.ids[i], endpoint: g.endpoint(), access: granaryAccess, secret: granarySecret, route: route != viaNode}
		clients[i] = newClient(t, clusterBucket, 64)
		defer clients[i].close()
	}
	if route == byRing {
		p, err := fetchPlacer(ctx, clients[0])
		if err != nil {
			return err
		}
		for _, c := range clients {
			c.place = p
		}
	}
	reads := scaleReads(r.objs.scale, nodes)
	for pass := 1; pass <= scalePasses; pass++ {
		row, err := r.scalePass(ctx, ns, clients, reads, nodes)
		if err != nil {
			return fmt.Errorf("pass %d: %w\n%s", pass, err, ns.tails())
		}
		row.layout, row.pass = layout, pass
		s := row.served
		r.logf("%-48s pass %d %6d reads %8.0f ops/s p50 %-9v ram %.0f hot %.0f disk %.0f peer %.0f redirects %.0f origin %.0f cpu/read nodes %v faults/read %.1f",
			layout, pass, row.stats.reads, row.stats.opsPerSec(), row.stats.p50.Round(time.Microsecond),
			s.ram, s.hot, s.disk, s.peerReads, s.redirects, s.originReqs, row.perRead().Round(time.Microsecond), row.faultsPerRead())
		r.rep.scale = append(r.rep.scale, row)
	}
	return nil
}

// scalePass reads every object through every node once, all at once.
func (r *clusterRun) scalePass(ctx context.Context, ns *nodeSet, clients []*client, reads []hopRead, nodes int) (scaleRow, error) {
	before, err := ns.served(ctx)
	if err != nil {
		return scaleRow{}, err
	}
	cpu0, err := ns.cpu()
	if err != nil {
		return scaleRow{}, err
	}
	faults0, err := ns.faults()
	if err != nil {
		return scaleRow{}, err
	}
	st, err := runReads(ctx, clients, reads, r.plan.workers*nodes)
	if err != nil {
		return scaleRow{}, err
	}
	cpu1, err := ns.cpu()
	if err != nil {
		return scaleRow{}, err
	}
	faults1, err := ns.faults()
	if err != nil {
		return scaleRow{}, err
	}
	after, err := ns.served(ctx)
	if err != nil {
		return scaleRow{}, err
	}
	return scaleRow{stats: st, served: after.minus(before), nodeCPU: cpu1 - cpu0, faults: faults1 - faults0}, nil
}

// scaleReads reads every object through each of nodes nodes, each node
// in its own shuffled order, interleaved so that every node is read at
// once.
func scaleReads(objs []object, nodes int) []hopRead {
	perm := make([][]int, nodes)
	for n := range perm {
		perm[n] = rand.New(rand.NewPCG(31, uint64(n))).Perm(len(objs))
	}
	reads := make([]hopRead, 0, len(objs)*nodes)
	for i := range objs {
		for n := range nodes {
			o := objs[perm[n][i]]
			reads = append(reads, hopRead{node: n, key: o.key, want: o.data, whole: true})
		}
	}
	return reads
}

// findScale returns the row of layout and pass, or a zero row.
func (r *clusterReport) findScale(layout string, pass int) scaleRow {
	for _, s := range r.scale {
		if s.layout == layout && s.pass == pass {
			return s
		}
	}
	return scaleRow{}
}

// scaleTable renders the scaling part.
func (r *clusterReport) scaleTable(b *strings.Builder) {
	p := r.plan
	fmt.Fprintf(b, "## Scaling: the set fits the cluster, not one node\n\n%d objects of %s read whole, each through every node "+
		"of a layout in each pass (each node its own shuffled order, %d workers per node, all nodes at once). One node alone: "+
		"--ram %s. The cluster: --ram %s per node, so each node's RAM tier holds its third of the set and not the whole "+
		"(hot copies of the rest get the room its third leaves, as the admission policy decides, and those RAM declines go to the "+
		"room its owned chunks leave in its --disk); then three nodes with the "+
		"node alone's --ram, where copies of the whole set fit beside each node's third; then the first cluster again, its "+
		"clients asking for owner routing (X-Granary-Route: owner: a node that would relay a read redirects it to the owner, "+
		"and the client sends it there); then with clients that place each read on its owner themselves (the ring call, "+
		"GET /_granary/ring, asked once of the node each client is pointed at), as granary mount and the boto3 helper "+
		"clients/python/granary_route.py do. The nodes share this "+
		"machine's cores, so the throughput of three nodes is not three nodes' throughput; their CPU per read is what a read "+
		"costs, on any machine.\n\n", p.scaleCount, sizeName(int64(p.scaleSize)), p.workers, mib(r.scaleAloneRAM), mib(r.scaleRAM))
	b.WriteString("| layout | pass | reads | reads/s | p50 | RAM hits | hot hits | peer chunk reads | redirects | origin requests | nodes' CPU per read | CPU per read / one node's | page faults per read |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, s := range r.scale {
		base := r.findScale(scaleAlone, s.pass).perRead()
		if s.pass == 1 { // the first pass fills: compare the warm cost
			base = 0
		}
		ratio := "-"
		if base > 0 && s.layout != scaleAlone {
			ratio = fmt.Sprintf("%.2fx", float64(s.perRead())/float64(base))
		}
		st, sv := s.stats, s.served
		fmt.Fprintf(b, "| %s | %d | %d | %.0f | %s | %.0f | %.0f | %.0f | %.0f | %.0f | %d µs | %s | %.1f |\n", s.layout, s.pass, st.reads,
			st.opsPerSec(), ms(st.p50), sv.ram, sv.hot, sv.peerReads, sv.redirects, sv.originReqs, s.perRead().Microseconds(), ratio, s.faultsPerRead())
	}
	b.WriteString("\nThe ideal is 1.00x: a read through any node costing the cluster what a read costs one node holding the set. " +
		"A read through a node that owns the object costs about that; one through another node is a peer hop (two requests, " +
		"and the answer authenticated on both sides) unless it holds a hot copy (hot hits: in RAM or on disk). Page faults (minor, from /proc/PID/stat) count " +
		"the pages the nodes touched for the first time: each one zeroed by the kernel, a cost that does not depend on the load.\n\n")
}
