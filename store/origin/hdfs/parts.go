// Where the parts of an object lie, from the part sizes its record kept
// when it was completed from a multipart upload.
package hdfs

import (
	"context"
	"fmt"

	"github.com/granary-dev/granary/store"
)

var _ store.PartLocator = (*Origin)(nil)

// PartRange returns the offset and length of part n of bucket/key. A file
// without recorded parts (written whole, changed since, or on a namenode
// without extended attributes) is one part.
func (o *Origin) PartRange(ctx context.Context, bucket, key string, n int) (int64, int64, int, error) {
	fi, rec, err := o.statRecord(ctx, bucket, key)
	if err != nil {
		return 0, 0, 0, err
	}
	sizes := []int64{fi.Size()}
	if rec != nil && len(rec.Parts) > 0 && rec.Version == fileETag(fi) {
		sizes = rec.Parts
	}
	off, length, parts, err := store.PartOf(sizes, n)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("hdfs: %s/%s: %w", bucket, key, err)
	}
	return off, length, parts, nil
}
