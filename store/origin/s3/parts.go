// Where the parts of an object lie. minio-go keeps neither Content-Range
// nor x-amz-mp-parts-count of a HEAD with partNumber, only the part's
// length: the count comes from the multipart ETag ("...-N"), the offset
// from the lengths of the parts before (one HEAD each).
package s3

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/minio/minio-go/v7"

	"github.com/granary-dev/granary/store"
)

var _ store.PartLocator = (*Origin)(nil)

// PartRange returns the offset and length of part n of bucket/key.
func (o *Origin) PartRange(ctx context.Context, bucket, key string, n int) (int64, int64, int, error) {
	info, err := o.Stat(ctx, bucket, key)
	if err != nil {
		return 0, 0, 0, err
	}
	parts := 1
	if i := strings.LastIndexByte(info.ETag, '-'); i >= 0 {
		if c, err := strconv.Atoi(info.ETag[i+1:]); err == nil && c > 0 {
			parts = c
		}
	}
	if n < 1 || n > parts {
		return 0, 0, 0, fmt.Errorf("s3: %s/%s has %d parts, not %d: %w", bucket, key, parts, n, store.ErrInvalidPart)
	}
	if parts == 1 {
		return 0, info.Size, 1, nil
	}
	var off, length int64
	for i := 1; i <= n; i++ {
		oi, err := o.core.StatObject(ctx, bucket, key, minio.StatObjectOptions{PartNumber: i})
		if err != nil {
			return 0, 0, 0, wrap(ctx, "stat part", bucket, key, err)
		}
		if strings.Trim(oi.ETag, `"`) != info.ETag {
			return 0, 0, 0, fmt.Errorf("s3: %s/%s changed while its parts were read: %w", bucket, key, store.ErrPreconditionFailed)
		}
		if i < n {
			off += oi.Size
		} else {
			length = oi.Size
		}
	}
	return off, length, parts, nil
}
