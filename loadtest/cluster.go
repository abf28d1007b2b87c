// The cluster scenario: three `granary serve` nodes that know each other
// (static --peers) in front of a slow origin (MinIO behind the slow
// proxy, the epochs scenario's link), measured twice over. First the cost
// of the peer hop: warm reads through the node that owns the chunks
// against reads through one that must ask the owner, and a repeat through
// that node (its hot copy), beside MinIO read directly. Then the origin
// requests a cluster saves: one read workload, each object read through
// each of the three nodes, against the cluster and against three
// independent nodes in front of the same origin.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/granary-dev/granary/cluster"
	"github.com/granary-dev/granary/internal/miniotest"
	"github.com/granary-dev/granary/internal/slowproxy"
)

// clusterBucket is the scenario's bucket on MinIO: small objects under
// "small/", large ones under "large/", the origin workload's under
// "saved/".
const clusterBucket = "cluster"

// clusterChunk is the nodes' chunk size (granary's default --chunk-size):
// the large objects are read in ranges of exactly one chunk each.
const clusterChunk = 8 << 20

// clusterPlan is the shape of a cluster run.
type clusterPlan struct {
	smallCount, smallSize int   // peer hop, small objects: one chunk each
	largeCount            int   // peer hop, large objects
	largeSize             int64 // a multiple of clusterChunk
	savedCount, savedSize int   // origin workload: objects, each read through every node
	workers               int   // parallel readers of small objects and of the origin workload
	rangeConc             int   // chunk ranges of large objects in flight
	scaleCount, scaleSize int   // scaling: objects read through every node
	fanoutSize            int64 // fan-out: the checkpoint three nodes restore at once
	disk                  int64 // --disk of every node
}

func fullClusterPlan() clusterPlan {
	return clusterPlan{smallCount: 2_000, smallSize: 64 << 10, largeCount: 4, largeSize: 256 << 20,
		savedCount: 1_000, savedSize: 256 << 10, workers: 16, rangeConc: 4, disk: 4 << 30,
		scaleCount: 3_000, scaleSize: 100 << 10, fanoutSize: 1 << 30}
}

func quickClusterPlan() clusterPlan {
	return clusterPlan{smallCount: 300, smallSize: 64 << 10, largeCount: 2, largeSize: 64 << 20,
		savedCount: 200, savedSize: 256 << 10, workers: 16, rangeConc: 4, disk: 2 << 30,
		scaleCount: 300, scaleSize: 100 << 10, fanoutSize: 128 << 20}
}

// clusterObjects are the scenario's objects, with their expected bytes.
type clusterObjects struct {
	small, large, saved, scale []object
	fanout                     object // a zero object without a fan-out part
}

// newClusterObjects builds p's objects. Small and saved objects are
// windows at distinct offsets into one random pool, as newDataset does
// (4099 does not divide the window range, and the counts here keep every
// offset below it, so no two objects share their bytes); large objects
// have streams of their own.
func newClusterObjects(p clusterPlan) clusterObjects {
	const poolSize = 64 << 20
	pool := randomBytes(poolSize, 11)
	window := func(i, size int) []byte {
		off := i * 4099 % (poolSize - size)
		return pool[off : off+size]
	}
	var o clusterObjects
	for i := range p.smallCount {
		o.small = append(o.small, object{key: fmt.Sprintf("small/%06d", i), data: window(i, p.smallSize)})
	}
	for i := range p.savedCount {
		o.saved = append(o.saved, object{key: fmt.Sprintf("saved/%06d", i), data: window(p.smallCount+i, p.savedSize)})
	}
	for i := range p.scaleCount {
		o.scale = append(o.scale, object{key: fmt.Sprintf("scale/%06d", i), data: window(p.smallCount+p.savedCount+i, p.scaleSize)})
	}
	if p.fanoutSize > 0 {
		o.fanout = object{key: "fanout/" + sizeName(p.fanoutSize) + ".ckpt", data: randomBytes(p.fanoutSize, 300)}
	}
	for i := range p.largeCount {
		o.large = append(o.large, object{key: fmt.Sprintf("large/%s-%d", sizeName(p.largeSize), i), data: randomBytes(p.largeSize, uint64(200+i))})
	}
	return o
}

func (o clusterObjects) all() []object {
	all := append(append(append(append([]object{}, o.small...), o.large...), o.saved...), o.scale...)
	if o.fanout.key != "" {
		all = append(all, o.fanout)
	}
	return all
}

// clusterRun is one cluster scenario in progress.
type clusterRun struct {
	plan  clusterPlan
	objs  clusterObjects
	bin   string
	mio   *miniotest.Server
	proxy *slowproxy.Proxy
	rep   *clusterReport
	logf  func(string, ...any)
}

// runClusterScale measures the scaling part alone.
func runClusterScale(ctx context.Context, o options, logw io.Writer) (*clusterReport, error) {
	full := fullClusterPlan()
	if o.quick {
		full = quickClusterPlan()
	}
	p := clusterPlan{scaleCount: full.scaleCount, scaleSize: full.scaleSize, workers: full.workers, disk: full.disk}
	return runClusterPlan(ctx, o, p, logw)
}

// runCluster measures the scenario at its full or -quick size.
func runCluster(ctx context.Context, o options, logw io.Writer) (*clusterReport, error) {
	p := fullClusterPlan()
	if o.quick {
		p = quickClusterPlan()
	}
	return runClusterPlan(ctx, o, p, logw)
}

// runClusterPlan measures the scenario shaped by p. A failure after some
// rows were measured logs the partial report.
func runClusterPlan(ctx context.Context, o options, p clusterPlan, logw io.Writer) (*clusterReport, error) {
	if o.granary == "" {
		return nil, errors.New("the cluster scenario needs a granary binary (-granary)")
	}
	if p.largeSize%clusterChunk != 0 {
		return nil, fmt.Errorf("large objects of %d bytes: not a multiple of the %d-byte chunk", p.largeSize, clusterChunk)
	}
	slow := epochsLink(o)
	logf := func(format string, args ...any) { fmt.Fprintf(logw, "loadtest: cluster: "+format+"\n", args...) }
	mio, err := startMinio()
	if err != nil {
		return nil, err
	}
	defer mio.Stop()
	r := &clusterRun{plan: p, objs: newClusterObjects(p), bin: o.granary, mio: mio, logf: logf,
		rep: &clusterReport{plan: p, slow: slow, quick: o.quick, started: time.Now()}}
	d := &dataset{bucket: clusterBucket, sets: []objectSet{{objects: r.objs.all()}}}
	if r.proxy, err = seedSlowOrigin(ctx, d, mio, slow, logf); err != nil {
		return nil, err
	}
	defer r.proxy.Close()
	err = measureLogged(&r.rep.loadStart, &r.rep.loadEnd, func() error { return r.measure(ctx) },
		func() bool { return len(r.rep.hops)+len(r.rep.scale)+len(r.rep.fanout) > 0 }, r.rep.markdown, logf)
	if err != nil {
		return nil, err
	}
	return r.rep, nil
}

// measure runs the peer-hop part, the origin-requests part and the
// scaling part, each that the plan has objects for.
func (r *clusterRun) measure(ctx context.Context) error {
	if r.plan.smallCount+r.plan.largeCount > 0 {
		if err := r.hops(ctx); err != nil {
			return fmt.Errorf("peer hop: %w", err)
		}
	}
	if r.plan.savedCount > 0 {
		if err := r.saved(ctx); err != nil {
			return fmt.Errorf("origin requests: %w", err)
		}
	}
	if r.plan.fanoutSize > 0 {
		if err := r.fanout(ctx); err != nil {
			return fmt.Errorf("fan-out: %w", err)
		}
	}
	if r.plan.scaleCount == 0 {
		return nil
	}
	if err := r.scaling(ctx); err != nil {
		return fmt.Errorf("scaling: %w", err)
	}
	return nil
}

// clusterIDs are the node IDs of every node set.
var clusterIDs = []string{"n1", "n2", "n3"}

// hops starts a cluster, and measures the small objects' and then the
// large objects' rows on it.
func (r *clusterRun) hops(ctx context.Context) error {
	ring, err := cluster.NewRing(clusterIDs)
	if err != nil {
		return err
	}
	small := smallUnits(r.objs.small, ring)
	large := largeUnits(r.objs.large, ring)
	ram := hotBudget(maxShare(append(append([]hopUnit{}, small...), large...), len(clusterIDs)))
	r.rep.hopRAM = ram
	// The objects never change: immutable metadata keeps revalidation
	// (a HEAD to the slow origin) off the warm rows.
	ns, err := startNodeSet(ctx, r.bin, r.proxy.Addr(), r.mio.AccessKey, r.mio.SecretKey, ram, r.plan.disk, true, "--freshness", "immutable")
	if err != nil {
		return err
	}
	defer ns.stop()
	floor, err := startRelayFloor(slices.Concat(small, large))
	if err != nil {
		return err
	}
	defer floor.stop()
	h := newHopBench(r, ns, floor)
	defer h.close()
	for _, set := range []hopSet{
		{name: setSmall, units: small, conc: r.plan.workers},
		{name: setLarge, units: large, conc: r.plan.rangeConc},
	} {
		if err := h.measureSet(ctx, set); err != nil {
			return fmt.Errorf("%s: %w\n%s", set.name, err, ns.tails())
		}
	}
	return nil
}

// hopUnit is one read of the peer-hop part: a whole small object, or one
// chunk-sized range of a large one, and the node that owns its chunk.
type hopUnit struct {
	key   string
	off   int64
	want  []byte // the bytes expected, len(want) of them from off
	whole bool   // a plain GET of the whole object, else a ranged one
	owner int    // index into clusterIDs
}

// via is u read through node (an index into clusterIDs, or directTarget).
func (u hopUnit) via(node int) hopRead {
	return hopRead{node: node, key: u.key, off: u.off, want: u.want, whole: u.whole}
}

// ownerIndex returns the index of the ring's owner of chunk index of key.
func ownerIndex(ring *cluster.Ring, key string, index int64) int {
	owner := ring.Owners(cluster.ChunkKey(clusterBucket, key, index), 1)[0]
	for i, id := range clusterIDs {
		if id == owner {
			return i
		}
	}
	panic("ring owner " + owner + " is no node")
}

// smallUnits reads every small object whole, in one shuffled order (the
// same for every row).
func smallUnits(objs []object, ring *cluster.Ring) []hopUnit {
	units := make([]hopUnit, len(objs))
	for i, j := range rand.New(rand.NewPCG(21, 0)).Perm(len(objs)) {
		o := objs[j]
		units[i] = hopUnit{key: o.key, want: o.data, whole: true, owner: ownerIndex(ring, o.key, 0)}
	}
	return units
}

// largeUnits reads every large object as chunk-aligned ranges of one
// chunk each, object after object, in order.
func largeUnits(objs []object, ring *cluster.Ring) []hopUnit {
	var units []hopUnit
	for _, o := range objs {
		for off := int64(0); off < int64(len(o.data)); off += clusterChunk {
			units = append(units, hopUnit{key: o.key, off: off, want: o.data[off:min(off+clusterChunk, int64(len(o.data)))],
				owner: ownerIndex(ring, o.key, off/clusterChunk)})
		}
	}
	return units
}

// nonOwner is the node a non-owner row reads u through: the one after
// its owner, so each node asks each other node for a share.
func nonOwner(u hopUnit) int { return (u.owner + 1) % len(clusterIDs) }

// otherNonOwner is the node of three that neither owns u nor is
// nonOwner(u).
func otherNonOwner(u hopUnit) int { return (u.owner + 2) % len(clusterIDs) }

// maxShare is the most bytes any one node reads as a non-owner, that is
// the most hot copies it keeps: each unit is read through both its
// non-owners (the fresh row, then the peer-hop rows).
func maxShare(units []hopUnit, nodes int) int64 {
	share := make([]int64, nodes)
	for _, u := range units {
		share[nonOwner(u)] += int64(len(u.want))
		share[otherNonOwner(u)] += int64(len(u.want))
	}
	return slices.Max(share)
}

// hotBudget is the --ram that gives a cluster node room for hot copies
// (they share the RAM tier, which is --ram less a reserve of 1/8 up to 256
// MiB, with the node's owned chunks) of several times share, at least 1
// GiB: the repeat rows then measure hot copies, not copies evicted for
// lack of room.
func hotBudget(share int64) int64 {
	hot := share + share/4 + 16<<20
	return max(8*hot+256<<20, 1<<30)
}
