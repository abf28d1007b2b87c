// Tests of the cluster scenario: the whole scenario at a tiny size with a
// granary built from this tree (every row's counters as the design says
// they must be, and fewer origin reads through the cluster than through
// independent nodes), and the pieces it is built from: the read units and
// their owners, the hot-tier budget and the metrics sums.
package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/granary-dev/granary/cluster"
)

// tinyClusterPlan keeps the scenario test short: 4 chunks of large
// object, a few dozen small ones.
func tinyClusterPlan() clusterPlan {
	return clusterPlan{smallCount: 60, smallSize: 64 << 10, largeCount: 1, largeSize: 4 * clusterChunk,
		savedCount: 60, savedSize: 256 << 10, workers: 8, rangeConc: 4, disk: 1 << 30,
		scaleCount: 60, scaleSize: 100 << 10, fanoutSize: 2 * clusterChunk}
}

func TestClusterScenario(t *testing.T) {
	if testing.Short() {
		t.Skip("builds granary, starts MinIO, four sets of three nodes and one alone")
	}
	bin := granaryForTest(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	p := tinyClusterPlan()
	var log bytes.Buffer
	rep, err := runClusterPlan(ctx, options{granary: bin}, p, &log)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	t.Log("\n" + rep.markdown())
	if rep.ownersChecked != p.smallCount+p.largeCount {
		t.Errorf("owners checked for %d objects, want %d", rep.ownersChecked, p.smallCount+p.largeCount)
	}
	sets := map[string]struct {
		units int
		bytes int64
	}{
		setSmall: {p.smallCount, int64(p.smallCount * p.smallSize)},
		setLarge: {int(p.largeSize / clusterChunk * int64(p.largeCount)), p.largeSize * int64(p.largeCount)},
	}
	if len(rep.hops) != 18 {
		t.Fatalf("%d peer-hop rows, want 18", len(rep.hops))
	}
	for _, h := range rep.hops {
		want := sets[h.set]
		if h.stats.reads != want.units || h.stats.bytes != want.bytes || h.stats.p50 <= 0 || h.stats.p99 < h.stats.p50 {
			t.Errorf("%s %s: %+v, want %d reads of %d bytes in all", h.set, h.row, h.stats, want.units, want.bytes)
		}
		checkServed(t, h, float64(want.units))
		if h.row == rowFloorRelay && (h.relayCPU <= 0 || h.relayCPU >= h.nodeCPU) {
			t.Errorf("%s %s: the relay ran %v of both servers' %v: want both to have run", h.set, h.row, h.relayCPU, h.nodeCPU)
		}
	}
	checkSaved(t, rep, p)
	checkScale(t, rep, p)
	checkFanout(t, rep, p)
	md := rep.markdown()
	for _, want := range []string{"| small objects | " + rowPeer + " |", "| large objects | " + rowHot + " |", "| small objects | " + rowFresh + " |", "| large objects | " + rowRouted + " |",
		"| " + savedCluster + " |", "| independent / cluster |", "## Origin requests saved",
		"## Scaling", "## Fan-out", "| " + scaleCluster + " | 2 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}

// checkServed checks where the nodes served row h's n chunk reads from.
func checkServed(t *testing.T, h hopRow, n float64) {
	t.Helper()
	s := h.served
	var ok bool
	switch h.row {
	case rowDirect, rowFloorDirect, rowFloorRelay: // no node in the way
		ok = s == servedCounts{}
	case rowCold:
		ok = s.originGets == n && s.peerReads == 0 && s.hot == 0
	case rowOwner:
		ok = s.ram == n && s.hot == 0 && s.peerReads == 0 && s.originReqs == 0
	case rowPeer: // the owner's RAM hit for each peer read
		ok = s.peerReads == n && s.ram == n && s.hot == 0 && s.originReqs == 0
	case rowHot:
		ok = s.hot == n && s.peerReads == 0 && s.originReqs == 0
	case rowRouted: // each read redirected, then a RAM hit at the owner
		ok = s.ram == n && s.hot == 0 && s.peerReads == 0 && s.originReqs == 0 && s.redirects == n
	case rowFresh: // metadata and chunks from the owners; a small object's from one call
		ok = s.peerReads == n && s.ram == n && s.hot == 0 && s.originGets == 0 && (h.set == setLarge || s.originReqs == 0)
	}
	if !ok {
		t.Errorf("%s %s: served %+v for %v chunk reads", h.set, h.row, s, n)
	}
}

// checkSaved checks the origin-requests rows: every read verified, each
// independent node read each object from the origin, the cluster fewer.
func checkSaved(t *testing.T, rep *clusterReport, p clusterPlan) {
	t.Helper()
	cl, ind := rep.findSaved(savedCluster), rep.findSaved(savedIndependent)
	n := float64(p.savedCount)
	for _, s := range []savedRow{cl, ind} {
		if s.stats.reads != 3*p.savedCount || s.stats.bytes != int64(3*p.savedCount*p.savedSize) || s.stats.elapsed <= 0 {
			t.Errorf("%s: %+v, want %d verified reads", s.config, s.stats, 3*p.savedCount)
		}
	}
	if ind.served.originGets != 3*n || ind.served.peerReads != 0 || ind.linkBytes < 3*int64(p.savedCount*p.savedSize) {
		t.Errorf("independent nodes: %+v, link %d; want %v origin GETs and no peer reads", ind.served, ind.linkBytes, 3*n)
	}
	if cl.served.originGets < n || cl.served.originGets >= ind.served.originGets ||
		cl.served.originBytes >= ind.served.originBytes || cl.linkBytes >= ind.linkBytes {
		t.Errorf("cluster: %+v, link %d; want %v..%v origin GETs and fewer bytes than %+v, link %d",
			cl.served, cl.linkBytes, n, ind.served.originGets-1, ind.served, ind.linkBytes)
	}
}

func TestClusterUnits(t *testing.T) {
	ring, err := cluster.NewRing(clusterIDs)
	if err != nil {
		t.Fatal(err)
	}
	p := tinyClusterPlan()
	p.largeSize = 3*clusterChunk + 5
	objs := clusterObjects{large: []object{{key: "large/x", data: randomBytes(p.largeSize, 1)}}}
	units := largeUnits(objs.large, ring)
	if len(units) != 4 || len(units[3].want) != 5 || units[3].off != 3*clusterChunk || units[0].whole {
		t.Fatalf("units of a 3-chunk-and-5-byte object: %d, last %d bytes at %d", len(units), len(units[3].want), units[3].off)
	}
	for i, u := range units {
		if !bytes.Equal(u.want, objs.large[0].data[u.off:u.off+int64(len(u.want))]) {
			t.Errorf("unit %d expects other bytes", i)
		}
		if want := ring.Owners(cluster.ChunkKey(clusterBucket, "large/x", int64(i)), 1)[0]; clusterIDs[u.owner] != want {
			t.Errorf("unit %d owned by %s, ring says %s", i, clusterIDs[u.owner], want)
		}
		if nonOwner(u) == u.owner {
			t.Errorf("unit %d: the non-owner is its owner", i)
		}
	}
	small := smallUnits(newClusterObjects(tinyClusterPlan()).small, ring)
	owners := map[int]int{}
	for _, u := range small {
		owners[u.owner]++
	}
	if len(small) != 60 || len(owners) != 3 {
		t.Errorf("%d small units, owners %v: want 60 spread over 3 nodes", len(small), owners)
	}
	if got := maxShare([]hopUnit{{want: make([]byte, 10), owner: 0}, {want: make([]byte, 7), owner: 2}, {want: make([]byte, 5), owner: 0}}, 3); got != 22 {
		t.Errorf("maxShare = %d, want 22 (node 1 copies two units of owner 0 and one of owner 2)", got)
	}
}

// TestHotBudget checks that the --ram the scenario gives makes a hot tier
// of at least the share, as the node splits it (cmd/granary ramTierBytes).
func TestHotBudget(t *testing.T) {
	for _, share := range []int64{0, 50 << 20, 400 << 20, 3 << 30} {
		ram := hotBudget(share)
		tier := ram - min(ram/8, 256<<20)
		if hot := tier / 8; hot < share {
			t.Errorf("share %d: --ram %d gives a hot tier of %d", share, ram, hot)
		}
	}
}

func TestServedCounts(t *testing.T) {
	text := func(ram, hot, peer, gets, stats, bytes string) string {
		// As a node writes them, by bucket: ram and hot hits split over two.
		return "granary_cache_hits_total{bucket=\"a\",tier=\"ram\"} " + ram + "\ngranary_cache_hits_total{bucket=\"a\",tier=\"hot\"} " + hot +
			"\ngranary_cache_hits_total{bucket=\"b\",tier=\"ram\"} 0\ngranary_cache_hits_total{bucket=\"b\",tier=\"hot\"} 0" +
			"\ngranary_cache_hits_total{bucket=\"a\",tier=\"disk\"} 2\ngranary_cache_misses_total{bucket=\"a\"} 4\ngranary_peer_chunk_reads_total " + peer +
			"\ngranary_origin_requests_total{op=\"get\",result=\"ok\"} " + gets + "\ngranary_origin_requests_total{op=\"get\",result=\"error\"} 1" +
			"\ngranary_origin_requests_total{op=\"stat\",result=\"ok\"} " + stats + "\ngranary_origin_read_bytes_total{bucket=\"a\"} " + bytes + "\n"
	}
	parse := func(s string) metricSet {
		m, err := parseMetrics(strings.NewReader(s))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	before := servedOf([]metricSet{parse(text("1", "0", "0", "3", "0", "100")), parse(text("0", "0", "0", "0", "0", "0"))})
	after := servedOf([]metricSet{parse(text("11", "5", "2", "4", "6", "1100")), parse(text("3", "1", "7", "9", "0", "50"))})
	got := after.minus(before)
	want := servedCounts{ram: 13, hot: 6, peerReads: 9, originGets: 10, originStats: 6, originReqs: 16, originBytes: 1050}
	if got != want {
		t.Errorf("served over the interval %+v, want %+v", got, want)
	}
}

// checkScale checks the scaling rows: every pass read every object
// through every node, verified; each layout's first pass read each object
// from the origin once (a cluster's owners fill, its other nodes ask
// them), and the warm passes never.
func checkScale(t *testing.T, rep *clusterReport, p clusterPlan) {
	t.Helper()
	if len(rep.scale) != 5*scalePasses {
		t.Fatalf("%d scaling rows, want %d", len(rep.scale), 5*scalePasses)
	}
	for _, s := range rep.scale {
		nodes := 1
		if s.layout != scaleAlone {
			nodes = len(clusterIDs)
		}
		want := p.scaleCount * nodes
		// (CPU is counted in 10 ms ticks: a warm pass of a few reads may
		// show none.)
		if s.stats.reads != want || s.stats.bytes != int64(want*p.scaleSize) || s.nodeCPU < 0 {
			t.Errorf("%s pass %d: %+v, cpu %v; want %d verified reads", s.layout, s.pass, s.stats, s.nodeCPU, want)
		}
		origin := 0.0
		if s.pass == 1 {
			origin = float64(p.scaleCount)
		}
		if s.served.originGets != origin {
			t.Errorf("%s pass %d: %v origin GETs, want %v", s.layout, s.pass, s.served.originGets, origin)
		}
		if s.layout == scaleCluster && s.pass > 1 && s.served.peerReads+s.served.hot == 0 {
			t.Errorf("%s pass %d: neither a peer read nor a hot hit: %+v", s.layout, s.pass, s.served)
		}
		// Room for the whole set: every copy read in the first pass is
		// kept, so the later passes read locally only.
		if s.layout == scaleEvery && s.pass > 1 && (s.served.peerReads != 0 || s.served.hot != float64(2*p.scaleCount)) {
			t.Errorf("%s pass %d: %+v; want every other node's share from hot copies, no peer read", s.layout, s.pass, s.served)
		}
		// Redirected: each read not sent to its owner (two in three) was
		// redirected; placed by the ring: none.
		if s.layout == scaleRouted && s.served.redirects == 0 || s.layout == scaleRing && s.served.redirects != 0 {
			t.Errorf("%s pass %d: %v redirects", s.layout, s.pass, s.served.redirects)
		}
		// Routed: every read at the owner, none relayed.
		if (s.layout == scaleRouted || s.layout == scaleRing) && (s.served.peerReads != 0 || s.served.hot != 0 || (s.pass > 1 && s.served.ram != float64(want))) {
			t.Errorf("%s pass %d: %+v; want every read served by its owner", s.layout, s.pass, s.served)
		}
	}
}

// checkFanout checks the fan-out rows: every node restored the whole
// checkpoint, verified; three restores at once read it over the link
// about once, as one restore does.
func checkFanout(t *testing.T, rep *clusterReport, p clusterPlan) {
	t.Helper()
	if len(rep.fanout) != 1+len(clusterIDs) {
		t.Fatalf("%d fan-out rows, want %d", len(rep.fanout), 1+len(clusterIDs))
	}
	for _, row := range rep.fanout {
		if row.stats.bytes != p.fanoutSize || row.stats.reads != int(p.fanoutSize/clusterChunk) {
			t.Errorf("%s %s: %+v, want the whole checkpoint verified", row.layout, row.node, row.stats)
		}
		// Three restores without a cluster would read it three times; a
		// peer that times out on this busy machine may send a chunk to the
		// origin again, so the bound is below two, not at one.
		if row.linkBytes < p.fanoutSize || row.linkBytes >= 2*p.fanoutSize {
			t.Errorf("%s: %d link bytes for a checkpoint of %d: want it read from the origin about once", row.layout, row.linkBytes, p.fanoutSize)
		}
	}
}
