// The observers' hooks: a staged write-back object is handed to each
// observer before it is journaled (a cluster copies it elsewhere, so an
// acknowledged object outlives this node), and each hears when it
// reached the origin.
package writeback

import (
	"context"
	"fmt"
	"io"

	"github.com/granary-dev/granary/store"
)

// observed is the registered observers.
func (l *Log) observed() []Observer {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.observers
}

// replicate hands o's staged bytes to every observer; the first that
// fails fails the write.
func (l *Log) replicate(ctx context.Context, o *op) error {
	open := func() (io.ReadCloser, error) { return o.asm.Open(0, o.Info.Size) }
	for _, obs := range l.observed() {
		if err := obs.Staged(ctx, servedInfo(o), open); err != nil {
			// The client may retry: ErrUnavailable answers 503.
			return fmt.Errorf("writeback: %s/%s not replicated: %w: %w", o.Bucket, o.Key, store.ErrUnavailable, err)
		}
	}
	return nil
}

// persisted tells every observer that o is at the origin as etag.
func (l *Log) persisted(o *op, etag string) {
	for _, obs := range l.observed() {
		obs.Persisted(servedInfo(o), etag)
	}
}
