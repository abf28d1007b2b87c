// The ring through the signed admin API, for clients that read each chunk
// from the member that owns it (granary mount in a cluster):
//
//	GET /_granary/ring
//
// answers 200 with a RingAnswer: this node, the live members its ring
// places chunks on (each reached at its address, with the scheme the
// client used for this node) and the chunk size. A client that builds
// cluster.NewRing over the members' IDs places chunks as this node does.
// Any authenticated key may ask: it names addresses, no data.
package api

import (
	"github.com/gofiber/fiber/v2"
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
}

// ring answers an authenticated ring call.
func (a *Admin) ring(c *fiber.Ctx) error {
	self, members, chunk := a.engine.Placement()
	out := RingAnswer{Self: self.ID, ChunkSize: chunk, Members: make([]RingMember, len(members))}
	for i, m := range members {
		out.Members[i] = RingMember{ID: m.ID, Addr: m.Addr}
	}
	return c.JSON(out)
}
