// The replication hook: a staged write-back object is copied elsewhere
// (Options.Replicate) before it is journaled, so an acknowledged object
// outlives this node.
package writeback

import (
	"context"
	"fmt"
	"io"

	"github.com/granary-dev/granary/store"
)

// replicate hands o's staged bytes to Options.Replicate, if set.
func (l *Log) replicate(ctx context.Context, o *op) error {
	if l.opts.Replicate == nil {
		return nil
	}
	open := func() (io.ReadCloser, error) { return o.asm.Open(0, o.Info.Size) }
	if err := l.opts.Replicate(ctx, servedInfo(o), open); err != nil {
		// The client may retry: ErrUnavailable answers 503.
		return fmt.Errorf("writeback: %s/%s not replicated: %w: %w", o.Bucket, o.Key, store.ErrUnavailable, err)
	}
	return nil
}
