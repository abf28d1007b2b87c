// Owner routing: the member a client that asks to be sent to a chunk's
// owner (an S3 redirect) should read from, instead of this node relaying
// the chunk from that member.
package gateway

import (
	"github.com/granary-dev/granary/cluster"
	"github.com/granary-dev/granary/store"
)

// OwnerOf returns the member that owns the chunk of bucket/key holding
// byte off, and true, when a read of that chunk through this node would
// be a hop: this node is in a cluster, is not one of the chunk's owners,
// and holds no copy of it in memory (its RAM tier or its hot copies),
// as far as the object's cached metadata says. Otherwise (including a
// negative off) it returns false and the read is served here.
//
// It asks nothing of the origin or of other members: the placement comes
// from the ring alone, and an object whose metadata this node has not
// cached is routed by its key without it.
func (e *Engine) OwnerOf(bucket, key string, off int64) (cluster.Member, bool) {
	if e.peer.solo || off < 0 {
		return cluster.Member{}, false
	}
	id := store.ChunkID{Bucket: bucket, Key: key, Index: off / e.opts.ChunkSize}
	local, ask := e.chunkOwners(id)
	if local || len(ask) == 0 || e.holdsInMemory(id) {
		return cluster.Member{}, false
	}
	return ask[0], true
}

// holdsInMemory reports whether the RAM tier or the hot tier holds chunk
// id (its ETag taken from the cached metadata, if any), without counting
// a read.
func (e *Engine) holdsInMemory(id store.ChunkID) bool {
	ent, had := e.meta.lookup(id.Bucket, id.Key)
	if !had {
		return false
	}
	id.ETag = ent.info.ETag
	for _, t := range []store.Tier{e.opts.RAM, e.opts.Hot} {
		if t == nil {
			continue
		}
		if tierHas(t, id) {
			return true
		}
	}
	return false
}
