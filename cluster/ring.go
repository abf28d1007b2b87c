// The cluster's ring is internal/ring's: the one placement every node,
// and the mount, uses. These names keep the cluster's callers as they
// were.
package cluster

import "github.com/granary-dev/granary/internal/ring"

// Ring maps keys to their owners (internal/ring).
type Ring = ring.Ring

// NewRing returns the ring of members (IDs; duplicates ignored).
func NewRing(members []string) (*Ring, error) { return ring.New(members) }

// ChunkKey is the ring key of a chunk (internal/ring).
func ChunkKey(bucket, key string, index int64) []byte { return ring.ChunkKey(bucket, key, index) }
