// Where the parts of an object lie: one HEAD with partNumber, sent by the
// origin itself (minio-go keeps neither the Content-Range nor the
// x-amz-mp-parts-count of the answer).
package s3

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/minio/minio-go/v7"

	"github.com/granary-dev/granary/store"
)

var _ store.PartLocator = (*Origin)(nil)

// PartRange returns the offset and length of part n of bucket/key.
func (o *Origin) PartRange(ctx context.Context, bucket, key string, n int) (int64, int64, int, error) {
	if err := checkNames(bucket, key); err != nil {
		return 0, 0, 0, err
	}
	q := url.Values{"partNumber": {strconv.Itoa(n)}}
	resp, err := o.rawDo(ctx, http.MethodHead, bucket, key, q, nil, nil, 0)
	if err != nil {
		if er := minio.ToErrorResponse(err); er.StatusCode == http.StatusRequestedRangeNotSatisfiable ||
			er.Code == "InvalidPartNumber" || er.Code == "InvalidPart" {
			return 0, 0, 0, fmt.Errorf("s3: %s/%s part %d: %w", bucket, key, n, store.ErrInvalidPart)
		}
		return 0, 0, 0, wrap(ctx, "stat part", bucket, key, err)
	}
	resp.Body.Close()
	off, length, ok := parseContentRange(resp.Header.Get("Content-Range"))
	if !ok {
		// A server that answers with the whole object: it is one part.
		size, err := strconv.ParseInt(resp.Header.Get("Content-Length"), 10, 64)
		if n != 1 || err != nil {
			return 0, 0, 0, fmt.Errorf("s3: %s/%s part %d: %w", bucket, key, n, store.ErrInvalidPart)
		}
		off, length = 0, size
	}
	parts := 1
	if c, err := strconv.Atoi(resp.Header.Get("X-Amz-Mp-Parts-Count")); err == nil && c > 0 {
		parts = c
	}
	return off, length, parts, nil
}

// parseContentRange reads "bytes first-last/total".
func parseContentRange(v string) (off, length int64, ok bool) {
	v, ok = strings.CutPrefix(v, "bytes ")
	if !ok {
		return 0, 0, false
	}
	span, _, _ := strings.Cut(v, "/")
	a, b, ok := strings.Cut(span, "-")
	first, err1 := strconv.ParseInt(a, 10, 64)
	last, err2 := strconv.ParseInt(b, 10, 64)
	if !ok || err1 != nil || err2 != nil || last < first {
		return 0, 0, false
	}
	return first, last - first + 1, true
}
