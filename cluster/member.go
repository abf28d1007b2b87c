// Package cluster is what a Granary node knows of its peers: who is alive
// (a static list probed over the peer protocol, or gossip), which nodes own
// a chunk (a consistent-hash ring with bounded loads), and the write-back
// copies a node keeps for the others. The protocol itself is package
// cluster/peer, which this package reaches through Caller.
package cluster

import (
	"context"
	"io"

	"github.com/granary-dev/granary/store"
)

// Member is one node: its ID (unique in the cluster, stable across
// restarts) and the host:port of its S3 listener, which also serves the
// peer protocol.
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

// Caller is the peer calls membership and write-back copies make; a
// *peer.Client is one.
type Caller interface {
	// Ping checks that member to answers as the node it is listed as.
	Ping(ctx context.Context, to Member) error
	// PutReplica gives member to a durable copy of a write-back object.
	PutReplica(ctx context.Context, to Member, info store.ObjectInfo, body io.Reader) error
	// DropReplica tells member to that the copy is at the origin.
	DropReplica(ctx context.Context, to Member, bucket, key, etag string) error
	// Pending asks member to whether its write of bucket/key still waits
	// for the origin.
	Pending(ctx context.Context, to Member, bucket, key string) (bool, error)
}
