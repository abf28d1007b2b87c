// Multipart uploads of the HDFS origin: a local parts.Store (under
// Options.PartsDir) keeps the parts, and a completion streams the joined
// parts into HDFS through the same temp-file-and-rename path as Put, with
// the multipart ETag recorded on the file.
package hdfs

import (
	"context"
	"fmt"
	"io"

	"github.com/granary-dev/granary/store"
)

// NewUpload starts an upload of bucket/key. A folder key ("dir/") cannot
// be uploaded in parts: folder objects hold no bytes.
func (o *Origin) NewUpload(ctx context.Context, bucket, key string, meta store.ObjectMeta) (string, error) {
	if err := o.checkUpload(ctx, bucket, key); err != nil {
		return "", err
	}
	if isFolderKey(key) {
		return "", fmt.Errorf("%w: %s/%s: a key ending in '/' cannot be uploaded in parts", store.ErrInvalidKey, bucket, key)
	}
	return o.uploads.Create(bucket, key, meta)
}

// PutPart stores one part of an upload, locally.
func (o *Origin) PutPart(ctx context.Context, bucket, key, uploadID string, number int, body io.Reader, size int64) (store.PartInfo, error) {
	if err := o.checkUpload(ctx, bucket, key); err != nil {
		return store.PartInfo{}, err
	}
	return o.uploads.PutPart(ctx, bucket, key, uploadID, number, body, size)
}

// CompleteUpload joins the listed parts into bucket/key, replacing any
// object there atomically, and ends the upload. On failure the upload is
// left as it was.
func (o *Origin) CompleteUpload(ctx context.Context, bucket, key, uploadID string, list []store.CompletePart) (store.ObjectInfo, error) {
	if err := o.checkUpload(ctx, bucket, key); err != nil {
		return store.ObjectInfo{}, err
	}
	a, err := o.uploads.Assemble(bucket, key, uploadID, list)
	if err != nil {
		return store.ObjectInfo{}, err
	}
	rc, err := a.Open(0, -1)
	if err != nil {
		a.Close()
		return store.ObjectInfo{}, err
	}
	rec := &record{Meta: a.Meta.Normalized(), ETag: a.ETag}
	for _, p := range a.Parts {
		rec.Parts = append(rec.Parts, p.Size)
	}
	info, err := o.write(ctx, bucket, key, rc, a.Size, rec)
	rc.Close()
	if err != nil {
		a.Close()
		return store.ObjectInfo{}, err
	}
	// The object is in place. A failed Remove leaves the upload open: a
	// retried completion writes the same object again.
	if err := a.Remove(); err != nil {
		return store.ObjectInfo{}, fmt.Errorf("hdfs: end upload %s: %w", uploadID, err)
	}
	return info, nil
}

// AbortUpload ends an upload and drops its parts.
func (o *Origin) AbortUpload(ctx context.Context, bucket, key, uploadID string) error {
	if err := o.checkUpload(ctx, bucket, key); err != nil {
		return err
	}
	return o.uploads.Abort(bucket, key, uploadID)
}

// ListParts lists the parts of an upload.
func (o *Origin) ListParts(ctx context.Context, bucket, key, uploadID string, opts store.PartListOptions) (store.PartPage, error) {
	if err := o.checkUpload(ctx, bucket, key); err != nil {
		return store.PartPage{}, err
	}
	return o.uploads.ListParts(bucket, key, uploadID, opts)
}

// ListUploads lists the bucket's uploads in progress.
func (o *Origin) ListUploads(ctx context.Context, bucket string, opts store.UploadListOptions) (store.UploadPage, error) {
	if err := o.StatBucket(ctx, bucket); err != nil {
		return store.UploadPage{}, err
	}
	return o.uploads.ListUploads(bucket, opts)
}

// checkUpload validates an upload's target names and that its bucket
// exists.
func (o *Origin) checkUpload(ctx context.Context, bucket, key string) error {
	if err := checkKey(bucket, key); err != nil {
		return err
	}
	return o.StatBucket(ctx, bucket)
}
