// The cluster scenario's origin-requests part: one read workload, every
// object read once through each of three nodes in one shuffled order by
// parallel workers, against a fresh 3-node cluster and against three
// fresh independent nodes in front of the same slow origin, counting what
// the nodes asked of the origin and what the link carried.
package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// The origin-requests part's configurations, in the report's order.
const (
	savedCluster     = "3-node cluster"
	savedIndependent = "3 independent nodes"
)

// savedRow is one configuration's run of the workload.
type savedRow struct {
	config string
	stats  readStats
	served servedCounts // summed over the three nodes
	// linkBytes are the bytes the slow link carried from the origin to
	// the nodes during the run (bodies and HTTP headers).
	linkBytes int64
}

// savedReads is the workload: every object through every node, shuffled
// (the same order for both configurations).
func savedReads(objs []object, nodes int) []hopRead {
	reads := make([]hopRead, 0, len(objs)*nodes)
	for _, o := range objs {
		for n := range nodes {
			reads = append(reads, hopRead{node: n, key: o.key, want: o.data, whole: true})
		}
	}
	rand.New(rand.NewPCG(31, 0)).Shuffle(len(reads), func(i, j int) { reads[i], reads[j] = reads[j], reads[i] })
	return reads
}

// savedBudget is --ram of every node in this part: one node's RAM tier
// holds the whole workload twice over.
func (p clusterPlan) savedBudget() int64 {
	return max(1<<30, 2*int64(p.savedCount)*int64(p.savedSize)+256<<20)
}

// saved runs the workload on a cluster, then on independent nodes.
func (r *clusterRun) saved(ctx context.Context) error {
	reads := savedReads(r.objs.saved, len(clusterIDs))
	for _, clustered := range []bool{true, false} {
		row, err := r.savedRun(ctx, clustered, reads)
		if err != nil {
			return err
		}
		s := row.served
		r.logf("%-20s %6d reads in %-8v origin GETs %.0f stats %.0f requests %.0f bytes %s (link %s) peer reads %.0f",
			row.config, row.stats.reads, row.stats.elapsed.Round(time.Millisecond), s.originGets, s.originStats, s.originReqs,
			mib(int64(s.originBytes)), mib(row.linkBytes), s.peerReads)
		r.rep.saved = append(r.rep.saved, row)
	}
	return nil
}

// savedRun starts fresh nodes (empty caches), runs reads on them and
// stops them.
func (r *clusterRun) savedRun(ctx context.Context, clustered bool, reads []hopRead) (savedRow, error) {
	row := savedRow{config: savedIndependent}
	if clustered {
		row.config = savedCluster
	}
	r.rep.savedRAM = r.plan.savedBudget()
	ns, err := startNodeSet(ctx, r.bin, r.proxy.Addr(), r.mio.AccessKey, r.mio.SecretKey, r.rep.savedRAM, r.plan.disk, clustered, "--freshness", "immutable")
	if err != nil {
		return row, fmt.Errorf("%s: %w", row.config, err)
	}
	defer ns.stop()
	clients := make([]*client, len(ns.nodes))
	for i, g := range ns.nodes {
		clients[i] = newClient(target{name: ns.ids[i], endpoint: g.endpoint(), access: granaryAccess, secret: granarySecret}, clusterBucket, 64)
		defer clients[i].close()
	}
	before, err := ns.served(ctx)
	if err != nil {
		return row, err
	}
	_, down0 := r.proxy.Forwarded()
	if row.stats, err = runReads(ctx, clients, reads, r.plan.workers); err != nil {
		return row, fmt.Errorf("%s: %w\n%s", row.config, err, ns.tails())
	}
	_, down1 := r.proxy.Forwarded()
	after, err := ns.served(ctx)
	if err != nil {
		return row, err
	}
	row.served, row.linkBytes = after.minus(before), down1-down0
	return row, nil
}
