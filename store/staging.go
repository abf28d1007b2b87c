// Staging: the contract of a write-back log in front of an origin, as the
// engine's readers and the flush command see it, and the hook by which the
// log tells others of each object's life (store/writeback implements both
// sides).
package store

import (
	"context"
	"io"
)

// Stager is an Origin that may hold an object version on this node's
// disk, staged before it reaches the real origin (a write-back log): a
// read of it costs no network, so a reader may read it in place.
// GetStaged reads only that copy (r.ETag names the version); with none
// it fails with ErrNotFound and never reads the real origin. It is for
// clients' reads: the Stager may hold its own background work (uploads)
// back while they go on.
type Stager interface {
	GetStaged(bucket, key string, r ReadRange) (io.ReadCloser, error)
}

// Staging is a write-back log: the Origin a node writes to acknowledges
// a write once it is staged on this node (and copied to a member), and
// uploads it to the real origin later. Implementations must be safe for
// concurrent use.
type Staging interface {
	Stager
	// Flush waits until every write under bucket/prefix accepted before
	// the call is at the origin, calling progress (if not nil) at least
	// every second. It fails when ctx ends or an upload under the prefix
	// failed in a way retries cannot fix (the write stays staged). An
	// empty bucket means every bucket.
	Flush(ctx context.Context, bucket, prefix string, progress func(FlushStatus)) error
	// Persisted reports whether bucket/key has no write waiting for the
	// origin (true for a key never written through the log).
	Persisted(bucket, key string) bool
}

// FlushStatus is a flush's progress: what is still waiting under its
// prefix, and the last upload error seen there (empty if none).
type FlushStatus struct {
	Pending      int
	PendingBytes int64
	Uploaded     int
	LastError    string
}

// StageObserver hears of a write-back object's life: a cluster keeps a
// copy of each object on another member, and the cache learns the
// origin's name of each version. The log calls every observer it was
// given, in order.
type StageObserver interface {
	// Staged is called once the object is staged, before it is
	// journaled and acknowledged; open reads its bytes. An error fails
	// the write (nothing is journaled).
	Staged(ctx context.Context, staged ObjectInfo, open func() (io.ReadCloser, error)) error
	// Persisted is called after the object reached the origin, with the
	// info the log served for it and the origin's ETag (they differ only
	// if the origin names the version otherwise).
	Persisted(staged ObjectInfo, originETag string)
}
