// Multipart uploads at an S3 origin: each store.Multipart call is one
// request (two for a completion) through minio-go's Core, with the
// server's answers translated into store sentinels.
package s3

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/granary-dev/granary/store"
)

// checkUpload validates the names of an upload and its ID. IDs no server
// issues are answered here: an empty one (minio-go would refuse it with
// an error of its own), and one with a "." or ".." path segment (MinIO
// refuses every request with such a query value as a bad resource name).
func checkUpload(bucket, key, uploadID string) error {
	if err := checkNames(bucket, key); err != nil {
		return err
	}
	if uploadID == "" || hasDotSegment(uploadID) {
		return fmt.Errorf("s3: %s/%s: %w: upload ID %q", bucket, key, store.ErrNoSuchUpload, uploadID)
	}
	return nil
}

// hasDotSegment reports whether s, split at slashes and backslashes, has
// a segment that is "." or ".." once trimmed of white space.
func hasDotSegment(s string) bool {
	for _, seg := range strings.FieldsFunc(s, func(r rune) bool { return r == '/' || r == '\\' }) {
		if seg = strings.TrimSpace(seg); seg == "." || seg == ".." {
			return true
		}
	}
	return false
}

// NewUpload starts an upload of bucket/key. meta travels with the
// initiation, as S3 wants it: the server puts it on the completed object.
func (o *Origin) NewUpload(ctx context.Context, bucket, key string, meta store.ObjectMeta) (string, error) {
	if err := checkNames(bucket, key); err != nil {
		return "", err
	}
	var id string
	var err error
	if isBlank(key) {
		id, err = o.blankNewUpload(ctx, bucket, key, meta)
	} else {
		id, err = o.core.NewMultipartUpload(ctx, bucket, key, putOptions(meta))
	}
	if err != nil {
		return "", wrap(ctx, "new upload", bucket, key, err)
	}
	return id, nil
}

// PutPart streams exactly size bytes of body as part number of the
// upload, in one PUT. The body is never buffered, and so never retried:
// minio-go retries only seekable bodies, and the bodyCounter it reads
// through is not one. A body that ends early makes the request fail
// before it is complete, so the server keeps the part it had, if any.
func (o *Origin) PutPart(ctx context.Context, bucket, key, uploadID string, number int, body io.Reader, size int64) (store.PartInfo, error) {
	if err := checkUpload(bucket, key, uploadID); err != nil {
		return store.PartInfo{}, err
	}
	switch {
	case number < 1 || number > store.MaxPartNumber:
		return store.PartInfo{}, fmt.Errorf("s3: put part %s/%s: %w: %d", bucket, key, store.ErrInvalidPartNumber, number)
	case size < 0:
		return store.PartInfo{}, fmt.Errorf("s3: put part %s/%s: the size of a part must be known", bucket, key)
	case size > store.MaxPartSize:
		return store.PartInfo{}, fmt.Errorf("s3: put part %s/%s: %d bytes exceed the part limit of %d", bucket, key, size, int64(store.MaxPartSize))
	}
	br := &bodyCounter{r: body, left: size}
	etag, err := o.putPart(ctx, bucket, key, uploadID, number, br, size)
	if err != nil {
		if berr := br.failure(); berr != nil {
			return store.PartInfo{}, fmt.Errorf("s3: put part %d of %s/%s: %w", number, bucket, key, berr)
		}
		return store.PartInfo{}, o.payloadHint(wrap(ctx, fmt.Sprintf("put part %d of", number), bucket, key, err), err)
	}
	return store.PartInfo{
		Number: number, ETag: etag, Size: size,
		// A part's PUT response carries no Last-Modified; ListParts gives
		// the origin's.
		LastModified: time.Now().UTC(),
	}, nil
}

// putPart sends one part and returns its ETag, unquoted.
func (o *Origin) putPart(ctx context.Context, bucket, key, uploadID string, number int, body io.Reader, size int64) (string, error) {
	if isBlank(key) {
		return o.blankPutPart(ctx, bucket, key, uploadID, number, body, size)
	}
	body, opts := o.partBody(body)
	p, err := o.core.PutObjectPart(ctx, bucket, key, uploadID, number, body, size, opts)
	return strings.Trim(p.ETag, `"`), err
}

// CompleteUpload checks parts by S3's rules, asks the origin to join
// them, then reads the object's info back with a HEAD conditional on the
// ETag the completion reported (the completion's answer has neither the
// size nor the metadata). Should that HEAD fail (the object was replaced
// in between, or the origin failed just then), the completion still
// stands: the info then has the ETag but no metadata, and Size -1.
func (o *Origin) CompleteUpload(ctx context.Context, bucket, key, uploadID string, parts []store.CompletePart) (store.ObjectInfo, error) {
	if err := checkUpload(bucket, key, uploadID); err != nil {
		return store.ObjectInfo{}, err
	}
	if err := store.CheckCompletion(parts); err != nil {
		return store.ObjectInfo{}, fmt.Errorf("s3: complete upload %s/%s: %w", bucket, key, err)
	}
	cps := make([]minio.CompletePart, len(parts))
	for i, p := range parts {
		cps[i] = minio.CompletePart{PartNumber: p.Number, ETag: p.ETag}
	}
	etag, err := o.complete(ctx, bucket, key, uploadID, cps)
	if err != nil {
		return store.ObjectInfo{}, wrap(ctx, "complete upload", bucket, key, err)
	}
	info, err := o.statMatch(ctx, bucket, key, etag)
	if err != nil {
		return store.ObjectInfo{Bucket: bucket, Key: key, ETag: etag, Size: -1, LastModified: time.Now().UTC()}, nil
	}
	info.ETag = etag // the same, unless the origin quotes differently
	return info, nil
}

// complete asks the origin to join the parts and returns the object's
// ETag, unquoted.
func (o *Origin) complete(ctx context.Context, bucket, key, uploadID string, parts []minio.CompletePart) (string, error) {
	if isBlank(key) {
		return o.blankComplete(ctx, bucket, key, uploadID, parts)
	}
	ui, err := o.core.CompleteMultipartUpload(ctx, bucket, key, uploadID, parts, minio.PutObjectOptions{})
	return strings.Trim(ui.ETag, `"`), err
}

// statMatch is the info of bucket/key if its ETag is etag.
func (o *Origin) statMatch(ctx context.Context, bucket, key, etag string) (store.ObjectInfo, error) {
	if isBlank(key) {
		return o.blankStatMatch(ctx, bucket, key, etag)
	}
	var opts minio.StatObjectOptions
	opts.SetMatchETag(etag)
	oi, err := o.core.StatObject(ctx, bucket, key, opts)
	if err != nil {
		return store.ObjectInfo{}, err
	}
	return toInfo(bucket, oi), nil
}

// AbortUpload ends the upload. S3 answers an unknown upload with
// NoSuchUpload; MinIO answers it with success, and so does this origin
// then.
func (o *Origin) AbortUpload(ctx context.Context, bucket, key, uploadID string) error {
	if err := checkUpload(bucket, key, uploadID); err != nil {
		return err
	}
	if isBlank(key) {
		return wrap(ctx, "abort upload", bucket, key, o.blankAbort(ctx, bucket, key, uploadID))
	}
	return wrap(ctx, "abort upload", bucket, key, o.core.AbortMultipartUpload(ctx, bucket, key, uploadID))
}
