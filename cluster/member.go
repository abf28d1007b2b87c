// Package cluster is what a Granary node knows of its peers: who is alive
// (a static list probed over the peer protocol, or gossip), which nodes own
// a chunk (a consistent-hash ring with bounded loads), the authenticated
// peer protocol spoken on each node's S3 listener, and the write-back
// copies a node keeps for the others.
package cluster

// Member is one node: its ID (unique in the cluster, stable across
// restarts) and the host:port of its S3 listener, which also serves the
// peer protocol under PeerPrefix.
type Member struct {
	ID   string `json:"id"`
	Addr string `json:"addr"`
}

// Membership says which members are alive now.
//
// Implementations: Static (a fixed list whose members are probed) and
// Gossip (hashicorp/memberlist, for nodes that come and go).
type Membership interface {
	// Members returns the live members, this node included, sorted by ID.
	Members() []Member
	// Changes returns a channel that receives after each change of
	// Members (changes close together may be coalesced into one receive;
	// the channel has a buffer of 1 and is never closed).
	Changes() <-chan struct{}
	// Close stops the background work (gossip leaves the cluster
	// gracefully first, so the others see it gone at once).
	Close() error
}
