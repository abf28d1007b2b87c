// Endpoints: one service reached through several endpoints (a cluster's
// nodes), as a job whose ranks run on every node reads it.
package bench

import (
	"context"
	"io"
	"sync/atomic"
)

// Endpoints is a Store over endpoints of one service: each read goes to the
// next endpoint in turn; writes and small fetches (the manifest) go to
// the first. Stores must not be empty.
type Endpoints struct {
	Stores []Store
	next   atomic.Uint64
}

var _ Store = (*Endpoints)(nil)

// Put writes through the first endpoint.
func (s *Endpoints) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	return s.Stores[0].Put(ctx, key, r, size)
}

// Read reads through the next endpoint.
func (s *Endpoints) Read(ctx context.Context, key string, off, n int64, whole bool) (int64, error) {
	i := (s.next.Add(1) - 1) % uint64(len(s.Stores))
	return s.Stores[i].Read(ctx, key, off, n, whole)
}

// Fetch reads through the first endpoint.
func (s *Endpoints) Fetch(ctx context.Context, key string) ([]byte, error) {
	return s.Stores[0].Fetch(ctx, key)
}
