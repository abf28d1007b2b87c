// Owners: a cluster read as a client that knows its placement reads it
// (granary mount, the boto3 helper): each read sent to the member that
// owns the chunk it starts in.
package bench

import (
	"context"
	"io"
)

// Owners is a Store over a cluster's members: a read goes to the store
// Owner names for its key and first byte; writes and small fetches go to
// the first store. Stores must not be empty, and Owner must return an
// index into it.
type Owners struct {
	Stores []Store
	Owner  func(key string, off int64) int
}

var _ Store = (*Owners)(nil)

// Put writes through the first store.
func (s *Owners) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	return s.Stores[0].Put(ctx, key, r, size)
}

// Read reads through the store of the owner of key's byte off.
func (s *Owners) Read(ctx context.Context, key string, off, n int64, whole bool) (int64, error) {
	return s.Stores[s.Owner(key, off)].Read(ctx, key, off, n, whole)
}

// Fetch reads through the first store.
func (s *Owners) Fetch(ctx context.Context, key string) ([]byte, error) {
	return s.Stores[0].Fetch(ctx, key)
}
