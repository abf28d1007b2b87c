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
	off, length, parts, err := store.PartOf(sizes, n)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("fs: %s/%s: %w", bucket, key, err)
	}
	return off, length, parts, nil
}
