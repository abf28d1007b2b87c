// The cluster scenario's markdown report: the peer-hop rows of each set
// (throughput, latency, ratios, and where the nodes served the reads
// from), then the origin requests of one workload through a cluster and
// through independent nodes, with their ratio.
package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/granary-dev/granary/internal/slowproxy"
)

// clusterReport collects a cluster run's results.
type clusterReport struct {
	plan    clusterPlan
	slow    slowproxy.Options
	quick   bool
	started time.Time
	hops    []hopRow
	saved   []savedRow
	scale   []scaleRow
	fanout  []fanRow
	// hopRAM and savedRAM are --ram of the nodes of each part.
	hopRAM, savedRAM int64
	// scaleRAM and scaleAloneRAM are --ram of the scaling part's cluster
	// nodes and of its node alone.
	scaleRAM, scaleAloneRAM int64
	// ownersChecked counts the objects whose holdings on every node
	// matched the owners the scenario computed.
	ownersChecked      int
	loadStart, loadEnd string // as in report
}

// findHop returns the row of set and name, or a zero row.
func (r *clusterReport) findHop(set, name string) hopRow {
	for _, h := range r.hops {
		if h.set == set && h.row == name {
			return h
		}
	}
	return hopRow{}
}

// findSaved returns config's row, or a zero row.
func (r *clusterReport) findSaved(config string) savedRow {
	for _, s := range r.saved {
		if s.config == config {
			return s
		}
	}
	return savedRow{}
}

func (r *clusterReport) markdown() string {
	var b strings.Builder
	r.header(&b)
	if len(r.hops) > 0 {
		r.hopTable(&b)
	}
	if len(r.saved) > 0 {
		r.savedTable(&b)
	}
	if len(r.fanout) > 0 {
		r.fanTable(&b)
	}
	if len(r.scale) > 0 {
		r.scaleTable(&b)
	}
	return b.String()
}

// header renders the title and the setup.
func (r *clusterReport) header(b *strings.Builder) {
	fmt.Fprintf(b, "# Granary cluster: the peer hop and the origin requests it saves\n\n")
	b.WriteString(runStamp(r.started, r.quick))
	fmt.Fprintf(b, ". Three `granary serve` nodes on loopback (n1, n2, n3), a cluster with static --peers, each its own data "+
		"directory, --chunk-size %s (the default), --freshness immutable (the objects never change), --disk %s. "+
		"Their origin is MinIO behind a throttling proxy: %s. Every GET is signed (SigV4 headers) and every byte it returns "+
		"is checked against the object's (a stronger check than a digest); a wrong byte fails the run. "+
		"Load average (1 min) %s before, %s after.\n\n",
		sizeName(clusterChunk), mib(r.plan.disk), r.slow, r.loadStart, r.loadEnd)
}

// hopTable renders the peer-hop part.
func (r *clusterReport) hopTable(b *strings.Builder) {
	p := r.plan
	fmt.Fprintf(b, "## The peer hop\n\nSmall objects: %d of %s (one chunk each), read whole by %d workers in one shuffled order. "+
		"Large objects: %d of %s, read as chunk-aligned ranges of one chunk (%s) each, %d ranges in flight, object after object. "+
		"Each row reads every object (every range) once. Nodes: --ram %s, so the room hot copies get in the RAM tier holds "+
		"a node's whole share of copies and the repeat rows measure copies, not evictions.\n\n",
		p.smallCount, sizeName(int64(p.smallSize)), p.workers, p.largeCount, sizeName(p.largeSize), sizeName(clusterChunk),
		p.rangeConc, mib(r.hopRAM))
	fmt.Fprintf(b, "Owners: the scenario computes each chunk's owner with the nodes' own ring (cluster.NewRing over the "+
		"three IDs, cluster.ChunkKey), reads each chunk cold through its owner only, and then asks the cluster "+
		"(GET /_granary/status?bucket&key, every member's holdings per tier) what each node holds: for all %d objects "+
		"each node's RAM tier held exactly the chunks the ring gives it, and no node held a hot copy. A HEAD of every "+
		"object through every node follows (untimed), so each node has the metadata and a warm row's reads are chunk "+
		"reads alone. Non-owner rows send each read to the node after its chunk's owner (n1→n2→n3→n1), so every node "+
		"asks each other node for a share.\n\n", r.ownersChecked)
	b.WriteString("| set | row | reads | ops/s | MB/s | p50 | p99 | throughput / MinIO direct | p50 / via owner p50 | RAM hits | hot hits | disk hits | peer chunk reads | origin requests | servers' CPU per read | client's CPU per read |\n" +
		"|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, h := range r.hops {
		st, s := h.stats, h.served
		direct, owner := r.findHop(h.set, rowDirect).stats, r.findHop(h.set, rowOwner).stats
		vsDirect, vsOwner := ratio(st.mbPerSec(), direct.mbPerSec()), ratio(float64(st.p50), float64(owner.p50))
		counts := "| - | - | - | - | - | - |"
		switch {
		case servedByNodes(h.row):
			counts = fmt.Sprintf("| %.0f | %.0f | %.0f | %.0f | %.0f | %s |", s.ram, s.hot, s.disk, s.peerReads, s.originReqs, us(h.perRead(h.nodeCPU)))
		case h.row != rowDirect:
			counts = fmt.Sprintf("| - | - | - | - | - | %s |", us(h.perRead(h.nodeCPU)))
		}
		counts += " " + us(h.perRead(h.clientCPU)) + " |"
		fmt.Fprintf(b, "| %s | %s | %d | %.0f | %.1f | %s | %s | %s | %s %s\n", h.set, h.row, st.reads, st.opsPerSec(),
			st.mbPerSec(), ms(st.p50), ms(st.p99), vsDirect, vsOwner, counts)
	}
	b.WriteString("\nRows: *MinIO direct* reads MinIO itself on loopback, without the slow link (the baseline a local object " +
		"store sets). *Cold, via owner* reads each chunk through its owner with empty caches: the owner fills it from the " +
		"slow origin. *Warm, via owner* reads each chunk through its owner again: a local RAM hit. *Warm, first read via " +
		"non-owner* reads each chunk through a node that does not own it, for the first time: that node asks the owner " +
		"over the peer protocol (one hop on loopback) and keeps a copy in its hot tier; every node has the objects' metadata " +
		"(a HEAD of each through each node comes first). *Warm, first read via non-owner, redirected to the owner* sends " +
		"the same reads to the same nodes, before that row, asking for owner routing (X-Granary-Route: owner): the " +
		"node answers 307 with the owner's address and the client sends the GET again there, signed for it, as " +
		"clients/python/granary_route.py makes boto3 do; its CPU columns count both answers. *Warm, first read via the other non-owner, no metadata yet* is " +
		"that hop as a training job's first epoch makes it, before the HEADs, through the third node: the owner of the " +
		"first chunk answers the metadata with it (one call); a range past the first chunk asks for the metadata and its " +
		"chunk apart. *Warm, repeat via non-owner* reads " +
		"the same chunks through the same nodes again: hot-tier hits, no hop. The *relay floor* rows read the same objects " +
		"from nginx (a worker per core it may use, sendfile, open_file_cache), which serves them as files on tmpfs, " +
		"first directly, then through a second nginx that relays the first (proxy_pass over kept " +
		"connections, answers buffered in memory, no cache), unsigned: the least any relay pays over the server it " +
		"relays, reading each byte from one socket and writing it to another. The counters are the nodes' own " +
		"(/metrics, summed over the three nodes, over the row): granary_cache_hits_total by tier (an owner serving a peer " +
		"counts a RAM hit too, so a peer-hop row shows a RAM hit per chunk, at the owner), granary_peer_chunk_reads_total " +
		"(chunks a node read from their owner) and granary_origin_requests_total (every op). p50 and p99 are per GET, to its " +
		"last byte; the ratios compare rows of the same set. The CPU columns divide the CPU time (user and system) over " +
		"the row by its reads: the servers' (the three nodes', or nginx's workers' for the relay floor, " +
		"/proc/PID/task/*/schedstat, to the nanosecond) and the load test's own (getrusage: its " +
		"clients, and its slow proxy, idle in warm rows). Client, nodes and MinIO share the machine's cores, so a row's " +
		"throughput falls as its CPU per read rises.\n\n")
	r.hopSummary(b)
}

// hopSummary states the peer hop's cost in one line per set.
func (r *clusterReport) hopSummary(b *strings.Builder) {
	for _, set := range []string{setSmall, setLarge} {
		owner, peer, hot := r.findHop(set, rowOwner).stats, r.findHop(set, rowPeer).stats, r.findHop(set, rowHot).stats
		if owner.reads == 0 || peer.reads == 0 || hot.reads == 0 {
			continue
		}
		fmt.Fprintf(b, "- %s: a first read through a non-owner ran at %.2fx the throughput of reads through the owner "+
			"(p50 %s against %s, +%s per GET); a repeat through it, from its hot copy, at %.2fx (p50 %s).\n",
			set, peer.mbPerSec()/owner.mbPerSec(), ms(peer.p50), ms(owner.p50), ms(peer.p50-owner.p50),
			hot.mbPerSec()/owner.mbPerSec(), ms(hot.p50))
		ownerRow, peerRow := r.findHop(set, rowOwner), r.findHop(set, rowPeer)
		oc := ownerRow.perRead(ownerRow.nodeCPU)
		if pc := peerRow.perRead(peerRow.nodeCPU); oc > 0 && pc > 0 {
			fmt.Fprintf(b, "  The nodes' CPU per read: %s through the owner, %s through a non-owner (%.2fx); the client's: %s and %s.\n",
				us(oc), us(pc), float64(pc)/float64(oc), us(ownerRow.perRead(ownerRow.clientCPU)), us(peerRow.perRead(peerRow.clientCPU)))
		}
		if routed := r.findHop(set, rowRouted); routed.stats.reads > 0 && oc > 0 {
			rc := routed.perRead(routed.nodeCPU)
			fmt.Fprintf(b, "  Redirected to the owner instead (owner routing): %.2fx the throughput through the owner "+
				"(p50 %s), the nodes' CPU per read %s (%.2fx the owner's), the client's %s.\n",
				routed.stats.mbPerSec()/owner.mbPerSec(), ms(routed.stats.p50), us(rc), float64(rc)/float64(oc),
				us(routed.perRead(routed.clientCPU)))
		}
		if fresh := r.findHop(set, rowFresh).stats; fresh.reads > 0 {
			fmt.Fprintf(b, "  Before the node had the metadata: %.2fx (p50 %s).\n", fresh.mbPerSec()/owner.mbPerSec(), ms(fresh.p50))
		}
		r.floorSummary(b, set)
	}
	b.WriteString("\n")
}

// floorSummary states what relaying cost nginx for set, beside what a
// hop cost the nodes.
func (r *clusterReport) floorSummary(b *strings.Builder, set string) {
	direct, relay := r.findHop(set, rowFloorDirect), r.findHop(set, rowFloorRelay)
	dc, rc := direct.perRead(direct.nodeCPU), relay.perRead(relay.nodeCPU)
	if dc <= 0 || rc <= 0 {
		return
	}
	ro := relay.perRead(relay.relayCPU)
	fmt.Fprintf(b, "  The relay floor: nginx's CPU per read was %s serving the objects from files and %s through a second "+
		"nginx relaying that one (%.2fx; the relay's alone %s, %.2fx a direct read), at %.0f and %.0f reads/s.",
		us(dc), us(rc), float64(rc)/float64(dc), us(ro), float64(ro)/float64(dc), direct.stats.opsPerSec(), relay.stats.opsPerSec())
	owner, peer := r.findHop(set, rowOwner), r.findHop(set, rowPeer)
	if oc, pc := owner.perRead(owner.nodeCPU), peer.perRead(peer.nodeCPU); oc > 0 && pc > 0 {
		fmt.Fprintf(b, " A hop's ratio over nginx's: %.2fx.", float64(pc)/float64(oc)/(float64(rc)/float64(dc)))
	}
	b.WriteString("\n")
}

// savedTable renders the origin-requests part.
func (r *clusterReport) savedTable(b *strings.Builder) {
	p := r.plan
	fmt.Fprintf(b, "## Origin requests saved\n\nOne workload: %d objects of %s (%s in all), each read once through each of "+
		"the three nodes (%d GETs), in one shuffled order (the same for both rows, so an object's three reads are spread "+
		"over the run and may overlap) by %d workers. Each row starts three fresh nodes (empty caches, --ram %s, the same "+
		"flags) in front of the same origin: a cluster, and three independent nodes (no --node-id or --peers). The counts "+
		"are the nodes' own, summed over the three: granary_origin_requests_total{op=\"get\"} (object reads, any result), "+
		"{op=\"stat\"} (metadata HEADs) and every op; granary_origin_read_bytes_total. The link column is what the slow "+
		"proxy carried from the origin (bodies and headers), a check from the origin's side.\n\n",
		p.savedCount, sizeName(int64(p.savedSize)), mib(int64(p.savedCount)*int64(p.savedSize)), 3*p.savedCount, p.workers, mib(r.savedRAM))
	b.WriteString("| configuration | GETs | wall time | GETs/s | origin GETs | origin HEADs | origin requests | origin bytes | link bytes | peer chunk reads |\n" +
		"|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, s := range r.saved {
		c := s.served
		fmt.Fprintf(b, "| %s | %d | %.2f s | %.0f | %.0f | %.0f | %.0f | %s | %s | %.0f |\n", s.config, s.stats.reads,
			s.stats.elapsed.Seconds(), s.stats.opsPerSec(), c.originGets, c.originStats, c.originReqs,
			mib(int64(c.originBytes)), mib(s.linkBytes), c.peerReads)
	}
	cl, ind := r.findSaved(savedCluster), r.findSaved(savedIndependent)
	if cl.served.originGets > 0 && ind.served.originGets > 0 && cl.stats.elapsed > 0 {
		fmt.Fprintf(b, "| independent / cluster | | %.2fx | | %.2fx | %s | %.2fx | %.2fx | %.2fx | |\n",
			ind.stats.elapsed.Seconds()/cl.stats.elapsed.Seconds(), ind.served.originGets/cl.served.originGets,
			ratio(ind.served.originStats, cl.served.originStats), ind.served.originReqs/cl.served.originReqs,
			ind.served.originBytes/cl.served.originBytes, float64(ind.linkBytes)/float64(cl.linkBytes))
	}
	fmt.Fprintf(b, "\nIdeal: the cluster reads each object from the origin once (%d GETs, %s), the independent nodes "+
		"three times (%d GETs): a ratio of 3. In the cluster a node that does not own an object asks the owner of its "+
		"first chunk for its metadata (which the owner reads from the origin together with that chunk) and then for "+
		"the bytes (peer chunk reads), so HEADs never reach the origin.\n\n",
		p.savedCount, mib(int64(p.savedCount)*int64(p.savedSize)), 3*p.savedCount)
	r.savedBounds(b)
}

// savedBounds renders, per configuration, the two floors the link puts
// under its wall time: the bytes it carried at its aggregate rate, and
// the origin requests, one round trip (twice the one-way latency) each,
// spread over the workers (a worker waits for one read at a time, and
// each of its reads waits for the origin requests it causes).
func (r *clusterReport) savedBounds(b *strings.Builder) {
	var parts []string
	for _, s := range r.saved {
		bytesFloor := "no bandwidth floor (unlimited link)"
		if r.slow.Total > 0 {
			bytesFloor = fmt.Sprintf("%.1f s for its link bytes at %s", float64(s.linkBytes)/r.slow.Total, slowproxy.RateName(r.slow.Total))
		}
		rtt := 2 * r.slow.Latency
		reqFloor := s.served.originReqs / float64(r.plan.workers) * rtt.Seconds()
		parts = append(parts, fmt.Sprintf("%s: %s, %.1f s for its %.0f origin requests at one %v round trip each over %d workers",
			s.config, bytesFloor, reqFloor, s.served.originReqs, rtt, r.plan.workers))
	}
	if len(parts) > 0 {
		fmt.Fprintf(b, "What bounds the wall time from below (the larger floor is the one that binds): %s.\n", strings.Join(parts, "; "))
	}
}
