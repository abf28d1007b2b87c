// Parts of an object (GET/HEAD with partNumber): an object not made from
// parts is its own part 1, answered from its metadata; the parts of a
// multipart object are located by the origin (store.PartLocator).
package gateway

import (
	"context"
	"fmt"
	"strings"

	"github.com/granary-dev/granary/store"
)

// PartRange returns the info of bucket/key, where its part n lies and how
// many parts it has. n past the last part is store.ErrInvalidPart; the
// parts of a multipart object at an origin that cannot locate them are
// store.ErrNotSupported.
func (e *Engine) PartRange(ctx context.Context, bucket, key string, n int) (info store.ObjectInfo, off, length int64, parts int, err error) {
	info, err = e.Head(ctx, bucket, key)
	if err != nil {
		return info, 0, 0, 0, err
	}
	if !strings.Contains(info.ETag, "-") { // written whole: one part
		if n != 1 {
			return info, 0, 0, 0, fmt.Errorf("gateway: %s/%s has 1 part, not %d: %w", bucket, key, n, store.ErrInvalidPart)
		}
		return info, 0, info.Size, 1, nil
	}
	pl, ok := e.opts.Origin.(store.PartLocator)
	if !ok {
		return info, 0, 0, 0, store.ErrNotSupported
	}
	off, length, parts, err = pl.PartRange(ctx, bucket, key, n)
	if err == nil && off+length > info.Size {
		// The origin answered for a newer version than the cached one.
		err = fmt.Errorf("gateway: part %d of %s/%s is past its end: %w", n, bucket, key, store.ErrPreconditionFailed)
	}
	return info, off, length, parts, err
}
