// Write-back copies: the contract of the store a cluster node keeps other
// members' write-back objects in (store/copies implements it), as the peer
// protocol and the cluster's takeover see it.
package store

import (
	"context"
	"io"
	"time"
)

// Copies keeps durable copies of write-back objects for other members
// (their primaries) until each primary reports its object at the origin,
// or dies and this node uploads the copies itself. A copy is named by
// (primary, bucket, key); of two copies of one key the newer version (by
// LastModified, the primary's clock) wins, whatever order they arrive in.
// Implementations must be safe for concurrent use.
type Copies interface {
	// Put keeps exactly info.Size bytes of body as primary's copy of
	// info's version, and returns once it is durable; a short body fails
	// with ErrIncompleteBody and keeps nothing. The copy it replaces
	// stays valid until the new one is kept.
	Put(ctx context.Context, primary string, info ObjectInfo, body io.Reader) error
	// Drop forgets primary's copy of bucket/key if it is version etag
	// (the primary has it at the origin); a newer copy is kept.
	Drop(primary, bucket, key, etag string) error
	// TakeOver uploads every copy kept for primary (a member that died)
	// to the origin, dropping each one uploaded, or found at the origin
	// already in that version or a newer one. Failed uploads stay for the
	// next call. It returns how many it uploaded and the first error.
	TakeOver(ctx context.Context, primary string) (int, error)
	// Reconcile settles the copies kept for primary, a live member,
	// written before before: pending asks the primary whether it still
	// waits to upload that key; a copy it no longer waits on is taken
	// over as TakeOver would. It stops at pending's first error and
	// returns how many copies it uploaded.
	Reconcile(ctx context.Context, primary string, before time.Time,
		pending func(ctx context.Context, bucket, key string) (bool, error)) (int, error)
	// Primaries returns the primaries copies are kept for, with how many
	// each (never 0).
	Primaries() map[string]int
}
