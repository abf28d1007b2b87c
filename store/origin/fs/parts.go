// Where the parts of an object lie, from the part sizes its sidecar
// recorded when it was completed from a multipart upload.
package fs

import (
	"context"
	"fmt"

	"github.com/granary-dev/granary/store"
)

var _ store.PartLocator = (*Origin)(nil)

// PartRange returns the offset and length of part n of bucket/key. An
// object without recorded parts (written whole, or behind Granary's back)
// is one part.
func (o *Origin) PartRange(ctx context.Context, bucket, key string, n int) (int64, int64, int, error) {
	info, err := o.Stat(ctx, bucket, key)
	if err != nil {
		return 0, 0, 0, err
	}
	var sizes []int64
	if sc := o.readSidecar(bucket, key); sc != nil && sc.ETag == info.ETag && sc.Size == info.Size {
		sizes = sc.Parts
	}
	if len(sizes) == 0 {
		sizes = []int64{info.Size}
	}
	if n < 1 || n > len(sizes) {
		return 0, 0, 0, fmt.Errorf("fs: %s/%s has %d parts, not %d: %w", bucket, key, len(sizes), n, store.ErrInvalidPart)
	}
	var off int64
	for _, s := range sizes[:n-1] {
		off += s
	}
	return off, sizes[n-1], len(sizes), nil
}
