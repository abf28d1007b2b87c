// Package ring places keys on members: consistent hashing over
// buraksezer/consistent with bounded loads. A Ring is immutable; a
// membership change builds a new one. It is a leaf (no package of ours),
// so a client (granary mount) places chunks as the nodes do without
// importing the cluster.
package ring

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/buraksezer/consistent"
	"github.com/cespare/xxhash/v2"
)

// ringConfig is the shape of a ring. Every node must use the same one, or
// the nodes disagree on owners.
type ringConfig struct {
	// partitions is the number of slots keys hash into (the library's
	// PartitionCount); the unit of placement and of movement.
	partitions int
	// vnodes is the number of points each member has on the hash circle
	// (the library's ReplicationFactor).
	vnodes int
	// load bounds each member's partitions to ceil(floor(partitions/N) *
	// load) (the library's Load).
	load float64
}

// defaultRingConfig was tuned with ring_test.go (200,000 keys, 3..8
// members). Measured with it:
//
//   - primary keys per member: within 1.1% of the mean (limit 10%);
//   - among the first 2 owners: within 2.4% of 2/N (limit 15%); first
//     3: within 3.6% of 3/N;
//   - adding a member moves at most 1/(N+1) + 2.1% of primaries (limit
//     +5%) and changes the first-two-owners set of 2/(N+1) + 4.1%;
//   - removing one moves at most 1/N + 1.9% (limit +5%), and 89% to 100%
//     of its keys go to their former second owner.
//
// A load just above 1 makes every member's cap floor(P/N)+1: the library
// bounds only the largest load, and loads of 1.05 to 1.25 left members
// 10% to 35% under the mean. 400 vnodes (against 100 or 200) keep the
// cascades of so tight a bound short: the movement excess fell from up
// to 5% to 2-3%. 2039 (prime) partitions against 4093 halve the
// table (P*N strings) for similar figures.
//
// It cannot hit the library's "not enough room to distribute partitions"
// panic for 1..partitions members: with f = floor(P/N) >= 1 and load > 1,
// ceil(f*load) >= f+1 when N does not divide P (and >= f when it does),
// so N members hold at least P partitions; every member has >= 2 vnodes,
// so the library's walk, which visits all vnodes but one, reaches each
// member. New still recovers that panic into an error.
var defaultRingConfig = ringConfig{partitions: 2039, vnodes: 400, load: 1.001}

// xxHasher is the ring's consistent.Hasher.
type xxHasher struct{}

func (xxHasher) Sum64(b []byte) uint64 { return xxhash.Sum64(b) }

// ringMember is a member ID as a consistent.Member.
type ringMember string

func (m ringMember) String() string { return string(m) }

// Ring maps keys to their owners. The zero Ring and a Ring of no members
// own nothing. Safe for concurrent use (it is immutable).
type Ring struct {
	// members are the distinct member IDs, sorted.
	members []string
	// hash is the library's ring; only FindPartitionID is used after
	// New (it reads no mutable state). nil when there are no members.
	hash *consistent.Consistent
	// table[p] lists every member once, in owner order for partition p:
	// the library's (bounded-load) owner first, then the others in the
	// order a walk of the hash circle from p meets them, except that a
	// member already at the load bound for a rank yields that rank to
	// the next one (so every rank is as balanced as the owners). Rows
	// share one backing array; nothing writes to it after New.
	table [][]string
}

// New returns the ring of members (IDs; duplicates ignored). It never
// panics: the library's panics (no members, load too tight for the
// partition count) are prevented by the configuration or recovered into an
// error.
func New(members []string) (*Ring, error) {
	return newRingWith(members, defaultRingConfig)
}

// newRingWith is New with an explicit configuration (tests use it to
// reach the library's panic).
func newRingWith(members []string, cfg ringConfig) (*Ring, error) {
	ids := slices.Clone(members)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	if len(ids) > 0 && ids[0] == "" {
		return nil, errors.New("cluster: ring: empty member ID")
	}
	if len(ids) == 0 {
		return &Ring{}, nil
	}
	hash, err := newConsistent(ids, cfg)
	if err != nil {
		return nil, err
	}
	table, err := ownerTable(hash, ids, cfg)
	if err != nil {
		return nil, err
	}
	return &Ring{members: ids, hash: hash, table: table}, nil
}

// newConsistent builds the library's ring over ids (sorted, distinct,
// non-empty), turning its panics into an error.
func newConsistent(ids []string, cfg ringConfig) (c *consistent.Consistent, err error) {
	defer func() {
		if p := recover(); p != nil {
			c, err = nil, fmt.Errorf("cluster: ring of %d members (partitions %d, load %g): %v",
				len(ids), cfg.partitions, cfg.load, p)
		}
	}()
	ms := make([]consistent.Member, len(ids))
	for i, id := range ids {
		ms[i] = ringMember(id)
	}
	return consistent.New(ms, consistent.Config{
		Hasher:            xxHasher{},
		PartitionCount:    cfg.partitions,
		ReplicationFactor: cfg.vnodes,
		Load:              cfg.load,
	}), nil
}

// vnode is one point of a member on the hash circle.
type vnode struct {
	hash   uint64
	member int // index into the sorted member IDs
}

// circle returns the members' points sorted by hash. The points are the
// library's own (member ID then the point's number, hashed), so a walk
// from a partition meets members in the order the library tries them
// when it places that partition; the member right after the owner is
// then the likeliest new owner should the owner leave.
func circle(ids []string, vnodes int) []vnode {
	points := make([]vnode, 0, len(ids)*vnodes)
	buf := make([]byte, 0, 64)
	for m, id := range ids {
		for i := range vnodes {
			buf = strconv.AppendInt(append(buf[:0], id...), int64(i), 10)
			points = append(points, vnode{hash: xxhash.Sum64(buf), member: m})
		}
	}
	slices.SortFunc(points, func(a, b vnode) int {
		return cmp.Or(cmp.Compare(a.hash, b.hash), cmp.Compare(a.member, b.member))
	})
	return points
}

// ownerTable computes every partition's row of owners (see Ring.table).
// Partitions are visited in order, as the library places them, so the
// rank loads and hence the table depend on the members alone.
func ownerTable(hash *consistent.Consistent, ids []string, cfg ringConfig) ([][]string, error) {
	n := len(ids)
	index := make(map[string]int, n)
	for i, id := range ids {
		index[id] = i
	}
	points := circle(ids, cfg.vnodes)
	// rankLoads[r*n+m] counts the partitions where member m is at rank r;
	// ranks >= 1 are bounded as the library bounds rank 0.
	rankLoads := make([]int, n*n)
	limit := int(math.Ceil(float64(cfg.partitions/n) * cfg.load))
	backing := make([]string, cfg.partitions*n)
	table := make([][]string, cfg.partitions)
	order := make([]int, 0, n)
	seen := make([]bool, n)
	for p := range table {
		owner := hash.GetPartitionOwner(p)
		if owner == nil {
			return nil, fmt.Errorf("cluster: ring: partition %d has no owner", p)
		}
		order = walk(order, seen, points, p, index[owner.String()])
		for r := 1; r < n; r++ {
			boundRank(order, r, rankLoads[r*n:(r+1)*n], limit)
		}
		row := backing[p*n : p*n : (p+1)*n]
		for _, m := range order {
			row = append(row, ids[m])
		}
		table[p] = row
	}
	return table, nil
}

// walk returns (in order[:0]) every member once: owner first, then the
// others as a walk of the circle from partition p meets them. seen is
// scratch of one flag per member.
func walk(order []int, seen []bool, points []vnode, p, owner int) []int {
	clear(seen)
	order = append(order[:0], owner)
	seen[owner] = true
	// The library places partition p from the first point at or after
	// hash(p) (the partition ID, little-endian), wrapping around.
	var pk [8]byte
	binary.LittleEndian.PutUint64(pk[:], uint64(p))
	start, _ := slices.BinarySearchFunc(points, xxhash.Sum64(pk[:]), func(v vnode, h uint64) int {
		return cmp.Compare(v.hash, h)
	})
	for i := 0; i < len(points) && len(order) < len(seen); i++ {
		v := points[(start+i)%len(points)]
		if !seen[v.member] {
			seen[v.member] = true
			order = append(order, v.member)
		}
	}
	return order
}

// boundRank moves to order[r] the first of order[r:] whose load at rank
// r is under limit (order[r] itself when all are at the limit), keeping
// the others in walk order, and counts it in loads (by member).
func boundRank(order []int, r int, loads []int, limit int) {
	pick := r
	for j := r; j < len(order); j++ {
		if loads[order[j]] < limit {
			pick = j
			break
		}
	}
	m := order[pick]
	copy(order[r+1:pick+1], order[r:pick])
	order[r] = m
	loads[m]++
}

// Owners returns the n distinct members that own key, the primary first
// (n is capped at the member count; nil when there are none). The table
// is computed once per ring, so a lookup is a hash and a slice index.
// The result is shared with the ring: callers must not modify it (its
// capacity is clipped, so appending to it copies).
func (r *Ring) Owners(key []byte, n int) []string {
	if r == nil || r.hash == nil || n <= 0 {
		return nil
	}
	row := r.table[r.hash.FindPartitionID(key)]
	n = min(n, len(row))
	return row[:n:n]
}

// Primaries returns the primary owner of every partition, by partition:
// with Partition, what a client needs to place a key without this
// package (nil when there are no members).
func (r *Ring) Primaries() []string {
	if r == nil || r.hash == nil {
		return nil
	}
	out := make([]string, len(r.table))
	for p, row := range r.table {
		out[p] = row[0]
	}
	return out
}

// Partition returns the partition key falls in, of partitions in all:
// its XXH64 (seed 0) modulo partitions, as the library's FindPartitionID
// computes it (TestPartitionIsTheLibrarys).
func Partition(key []byte, partitions int) int {
	return int(xxhash.Sum64(key) % uint64(partitions))
}

// Members returns the ring's members, sorted.
func (r *Ring) Members() []string {
	if r == nil {
		return nil
	}
	return slices.Clone(r.members)
}
