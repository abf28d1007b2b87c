// The ring through the signed admin API, for clients that read each chunk
// from the member that owns it (granary mount in a cluster, the boto3
// helper clients/python/granary_route.py):
//
//	GET /_granary/ring
//
// answers 200 with a RingAnswer: this node, the live members its ring
// places chunks on (each reached at its address, with the scheme the
// client used for this node), the chunk size, and each partition's
// primary owner. A client that builds cluster.NewRing over the members'
// IDs places chunks as this node does; one without this code places a
// chunk on Members[Partitions[p]], p being the XXH64 (seed 0) of the
// chunk's ring key (bucket, 0, key, 0, the chunk's index in decimal)
// modulo len(Partitions). Any authenticated key may ask: it names
// addresses, no data.
package api

import (
	"strings"
	"sync/atomic"

	"github.com/gofiber/fiber/v2"

	"github.com/granary-dev/granary/cluster"
)

// ringRoute is the path of the ring call.
const ringRoute = "/_granary/ring"

// RingMember is one member of a RingAnswer.
type RingMember struct {
	ID   string `json:"id"`
	Addr string `json:"addr"`
}

// RingAnswer is the answer of a ring call. Outside a cluster Members
// holds this node alone.
type RingAnswer struct {
	Self      string       `json:"self"`
	Members   []RingMember `json:"members"`
	ChunkSize int64        `json:"chunkSize"`
	// Partitions holds, for each partition, the index in Members of its
	// primary owner.
	Partitions []int `json:"partitions"`
}

// ring answers an authenticated ring call.
func (a *Admin) ring(c *fiber.Ctx) error {
	self, members, chunk := a.engine.Placement()
	out := RingAnswer{Self: self.ID, ChunkSize: chunk, Members: make([]RingMember, len(members))}
	ids := make([]string, len(members))
	for i, m := range members {
		out.Members[i] = RingMember{ID: m.ID, Addr: m.Addr}
		ids[i] = m.ID
	}
	parts, err := a.partitions.of(ids)
	if err != nil {
		return err
	}
	out.Partitions = parts
	return c.JSON(out)
}

// partitionTable keeps the partitions' primaries of the last member set
// asked about (a ring takes milliseconds to build; members change
// seldom).
type partitionTable struct {
	last atomic.Pointer[partitionEntry]
}

type partitionEntry struct {
	ids   string // the member IDs, in order, joined by NUL
	owner []int  // per partition, the primary's index in ids
}

// of returns, per partition, the index in ids of its primary owner.
func (t *partitionTable) of(ids []string) ([]int, error) {
	key := strings.Join(ids, "\x00")
	if e := t.last.Load(); e != nil && e.ids == key {
		return e.owner, nil
	}
	r, err := cluster.NewRing(ids)
	if err != nil {
		return nil, err
	}
	index := make(map[string]int, len(ids))
	for i, id := range ids {
		index[id] = i
	}
	prim := r.Primaries()
	owner := make([]int, len(prim))
	for p, id := range prim {
		owner[p] = index[id]
	}
	t.last.Store(&partitionEntry{ids: key, owner: owner})
	return owner, nil
}
