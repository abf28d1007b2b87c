// The cluster scenario's peer-hop part: one set of reads (small objects
// whole, or large objects chunk by chunk) measured as rows: MinIO direct,
// cold through each chunk's owner, then warm through the owner, through a
// node that must ask the owner, and again through that node (its hot
// copy). Between the cold row and the warm ones it checks, with each
// node's own account of what it holds, that the owners the scenario
// computed are the owners the nodes use.
package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// The sets and rows of the peer-hop part, in the report's order.
const (
	setSmall = "small objects"
	setLarge = "large objects"

	rowDirect = "MinIO direct (loopback, no slow link)"
	rowCold   = "cold, via owner (fills from the slow origin)"
	rowOwner  = "warm, via owner (local RAM)"
	rowPeer   = "warm, first read via non-owner (peer hop)"
	rowFresh  = "warm, first read via the other non-owner, no metadata yet"
	rowHot    = "warm, repeat via non-owner (hot copy)"
	rowRouted = "warm, first read via non-owner, redirected to the owner"
)

// directTarget is the client index of MinIO read directly.
var directTarget = len(clusterIDs)

// hopSet is one set of reads and its concurrency.
type hopSet struct {
	name  string
	units []hopUnit
	conc  int
}

// hopRead is one GET through one target.
type hopRead struct {
	node  int // index into clusterIDs, or directTarget
	key   string
	off   int64
	want  []byte
	whole bool
}

// hopRow is one row of the peer-hop part.
type hopRow struct {
	set, row string
	stats    readStats
	// served is where the nodes served the row's reads from, summed over
	// the three nodes; zero for the direct row.
	served servedCounts
	// nodeCPU and clientCPU are the CPU time the three nodes and the
	// load test used over the row (the nodes' is zero for the direct row;
	// for the relay floor's rows it is nginx's).
	nodeCPU, clientCPU time.Duration
	// relayCPU is the relay floor's relay's share of nodeCPU.
	relayCPU time.Duration
}

// perRead returns d spread over the row's reads.
func (h hopRow) perRead(d time.Duration) time.Duration {
	if h.stats.reads == 0 {
		return 0
	}
	return d / time.Duration(h.stats.reads)
}

// hopBench measures rows on one cluster.
type hopBench struct {
	r     *clusterRun
	ns    *nodeSet
	floor *relayFloor
	// clients: one per node, then MinIO direct (directTarget), the relay
	// floor's file server (floorDirectTarget) and its relay
	// (floorRelayTarget), both read unsigned, then one per node asking
	// for owner routing (routedTarget).
	clients []*client
}

// routedTarget is the client index of node read with owner routing.
func routedTarget(node int) int { return floorRelayTarget + 1 + node }

func newHopBench(r *clusterRun, ns *nodeSet, floor *relayFloor) *hopBench {
	h := &hopBench{r: r, ns: ns, floor: floor}
	// The nodes' clients share their connections, so a read redirected to
	// an owner goes over a connection as warm as a read sent to it.
	var shared *http.Client
	node := func(t target) *client {
		c := newClient(t, clusterBucket, 64)
		if shared == nil {
			shared = c.http
		}
		c.http = shared
		return c
	}
	for i, g := range ns.nodes {
		h.clients = append(h.clients, node(target{name: ns.ids[i], endpoint: g.endpoint(), access: granaryAccess, secret: granarySecret}))
	}
	mio := target{name: "minio", endpoint: r.mio.URL(), access: r.mio.AccessKey, secret: r.mio.SecretKey}
	h.clients = append(h.clients, newClient(mio, clusterBucket, 64),
		newClient(target{name: "nginx files", endpoint: floor.files.endpoint(), anonymous: true}, clusterBucket, 64),
		newClient(target{name: "nginx relay", endpoint: floor.relay.endpoint(), anonymous: true}, clusterBucket, 64))
	for i, g := range ns.nodes {
		t := target{name: ns.ids[i] + " routed", endpoint: g.endpoint(), access: granaryAccess, secret: granarySecret, route: true}
		h.clients = append(h.clients, node(t))
	}
	return h
}

func (h *hopBench) close() {
	for _, c := range h.clients {
		c.close()
	}
}

// measureSet measures set's rows in order. The cold row puts every chunk
// on its owner only; the check comes next. The fresh row reads each chunk
// through the other non-owner (the one the peer-hop rows do not use)
// before it knows the object: the hop as a training job's first epoch
// makes it, metadata and chunk from the owner. A HEAD of every object
// through every node then comes before the other warm rows (so each node
// has the metadata, and their reads are chunk reads alone). The routed
// row reads through the non-owner before the peer row does, so that node
// holds no copy yet and redirects every read to the owner.
func (h *hopBench) measureSet(ctx context.Context, set hopSet) error {
	owner := func(u hopUnit) int { return u.owner }
	if err := h.row(ctx, set, rowDirect, func(hopUnit) int { return directTarget }); err != nil {
		return err
	}
	if err := h.row(ctx, set, rowCold, owner); err != nil {
		return err
	}
	if err := h.checkOwners(ctx, set.units); err != nil {
		return err
	}
	if err := h.row(ctx, set, rowFresh, otherNonOwner); err != nil {
		return err
	}
	if err := h.headAll(ctx, set.units); err != nil {
		return err
	}
	for _, row := range []struct {
		name  string
		route func(hopUnit) int
	}{{rowOwner, owner}, {rowRouted, func(u hopUnit) int { return routedTarget(nonOwner(u)) }},
		{rowPeer, nonOwner}, {rowHot, nonOwner},
		{rowFloorDirect, func(hopUnit) int { return floorDirectTarget }},
		{rowFloorRelay, func(hopUnit) int { return floorRelayTarget }}} {
		if err := h.row(ctx, set, row.name, row.route); err != nil {
			return err
		}
	}
	return nil
}

// row reads every unit of set once, each through the target route picks,
// and adds the row with the nodes' counters over it and the CPU of the
// servers it reads (serverCPU).
func (h *hopBench) row(ctx context.Context, set hopSet, name string, route func(hopUnit) int) error {
	reads := make([]hopRead, len(set.units))
	for i, u := range set.units {
		reads[i] = u.via(route(u))
	}
	before, err := h.ns.served(ctx)
	if err != nil {
		return err
	}
	cpu0, relay0, err := h.serverCPU(name)
	if err != nil {
		return err
	}
	self0 := selfCPU()
	st, err := runReads(ctx, h.clients, reads, set.conc)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	self1 := selfCPU()
	cpu1, relay1, err := h.serverCPU(name)
	if err != nil {
		return err
	}
	after, err := h.ns.served(ctx)
	if err != nil {
		return err
	}
	row := hopRow{set: set.name, row: name, stats: st, clientCPU: self1 - self0, relayCPU: relay1 - relay0}
	if name != rowDirect {
		row.served, row.nodeCPU = after.minus(before), cpu1-cpu0
	}
	s := row.served
	h.r.logf("%-13s %-45s %6d reads %8.0f ops/s %8.1f MB/s p50 %-9v p99 %-9v ram %.0f hot %.0f disk %.0f peer %.0f origin %.0f cpu/read nodes %v client %v",
		set.name, name, st.reads, st.opsPerSec(), st.mbPerSec(), st.p50.Round(time.Microsecond), st.p99.Round(time.Microsecond),
		s.ram, s.hot, s.disk, s.peerReads, s.originReqs, row.perRead(row.nodeCPU).Round(time.Microsecond), row.perRead(row.clientCPU).Round(time.Microsecond))
	h.r.rep.hops = append(h.r.rep.hops, row)
	return nil
}

// serverCPU is the CPU time the servers a row reads have used: the three
// nodes', or both nginx's workers' for the relay floor's rows, to the
// nanosecond (a row of the small set may take only a few 10 ms ticks),
// and the relay's alone; none measured for MinIO direct.
func (h *hopBench) serverCPU(row string) (all, relay time.Duration, err error) {
	switch {
	case servedByNodes(row):
		all, err = h.ns.runTime()
		return all, 0, err
	case row == rowDirect:
		return 0, 0, nil
	}
	return h.floor.cpu()
}

// checkOwners asks the cluster what each node holds of every object read
// (after the cold row, which read each chunk through its owner only) and
// fails unless each node's RAM tier holds exactly the bytes of the chunks
// the scenario's ring gives it and no node holds a hot copy.
func (h *hopBench) checkOwners(ctx context.Context, units []hopUnit) error {
	want := map[string][]int64{} // key -> bytes owned per node
	var keys []string
	for _, u := range units {
		if want[u.key] == nil {
			want[u.key] = make([]int64, len(clusterIDs))
			keys = append(keys, u.key)
		}
		want[u.key][u.owner] += int64(len(u.want))
	}
	err := forEach(ctx, len(keys), 8, func(_, i int) error {
		held, err := h.ns.heldByNode(ctx, clusterBucket, keys[i])
		if err != nil {
			return err
		}
		for n, id := range clusterIDs {
			if got := held[id]; got["ram"] != want[keys[i]][n] || got["hot"] != 0 || got["hot-disk"] != 0 {
				return fmt.Errorf("%s: node %s holds %v, want %d bytes in RAM (the ring's share) and no hot copy",
					keys[i], id, got, want[keys[i]][n])
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("owners: %w", err)
	}
	h.r.rep.ownersChecked += len(keys)
	return nil
}

// headAll sends a HEAD for every object read through every node.
func (h *hopBench) headAll(ctx context.Context, units []hopUnit) error {
	var keys []string
	seen := map[string]bool{}
	for _, u := range units {
		if !seen[u.key] {
			seen[u.key] = true
			keys = append(keys, u.key)
		}
	}
	nodes := len(clusterIDs)
	return forEach(ctx, len(keys)*nodes, 16, func(_, i int) error {
		return headObject(ctx, h.clients[i%nodes], keys[i/nodes])
	})
}

// forEach calls f(w, i) for i in 0..n-1 with conc workers (w is the
// worker's number, 0..conc-1) and returns their errors; after one, the
// workers take no more work.
func forEach(ctx context.Context, n, conc int, f func(w, i int) error) error {
	var next atomic.Int64
	var failed atomic.Bool
	errs := make([]error, conc)
	var wg sync.WaitGroup
	for w := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < int64(n) && !failed.Load() && ctx.Err() == nil; i = next.Add(1) - 1 {
				if errs[w] = f(w, int(i)); errs[w] != nil {
					failed.Store(true)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return ctx.Err()
}

// readStats is one pass of reads.
type readStats struct {
	reads    int // GETs answered and verified, every byte
	bytes    int64
	elapsed  time.Duration
	p50, p99 time.Duration // per GET, to its last byte
}

func (s readStats) opsPerSec() float64 {
	if s.elapsed <= 0 {
		return 0
	}
	return float64(s.reads) / s.elapsed.Seconds()
}

func (s readStats) mbPerSec() float64 {
	if s.elapsed <= 0 {
		return 0
	}
	return float64(s.bytes) / 1e6 / s.elapsed.Seconds()
}

// runReads sends reads in order with conc workers, each GET through its
// target's client with every byte checked, and times them.
func runReads(ctx context.Context, clients []*client, reads []hopRead, conc int) (readStats, error) {
	lat := make([]time.Duration, len(reads)) // slot i is written only by the worker that took read i
	var nbytes atomic.Int64
	bufs := make([][]byte, conc) // bufs[w] is worker w's
	for w := range bufs {
		bufs[w] = make([]byte, readBufSize)
	}
	start := time.Now()
	err := forEach(ctx, len(reads), conc, func(w, i int) error {
		rd := reads[i]
		t0 := time.Now()
		n, err := clients[rd.node].get(ctx, rd.key, rd.off, rd.want, rd.whole, bufs[w])
		lat[i] = time.Since(t0)
		nbytes.Add(n)
		return err
	})
	elapsed := time.Since(start)
	if err != nil {
		return readStats{}, err
	}
	slices.Sort(lat)
	return readStats{reads: len(reads), bytes: nbytes.Load(), elapsed: elapsed,
		p50: percentile(lat, 0.50), p99: percentile(lat, 0.99)}, nil
}
