// Each member's share of the ring, for operators (the console's cluster
// table): the fraction of partitions it is the primary owner of
// (ring.Ring.Shares).
package cluster

// Shares returns each live member's share of the current ring; a member
// that is not live has none.
func (n *Node) Shares() map[string]float64 { return n.cur.Load().ring.Shares() }
