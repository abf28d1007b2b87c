// Multipart uploads of the directory origin: a parts.Store under
// Root/.granary/uploads keeps the parts (so uploads survive a restart), and
// a completion streams the joined parts through the same staged temp
// file, fsync and rename as Put, with the multipart ETag in the sidecar.
package fs

import (
	"context"
	"fmt"
	"io"
	"path"

	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/parts"
)

var _ store.Multipart = (*Origin)(nil)

// NewUpload starts an upload of bucket/key after the checks of Put (names,
// bucket, key not a directory). A folder key ("dir/") cannot be uploaded
// in parts: folder objects hold no bytes.
func (o *Origin) NewUpload(ctx context.Context, bucket, key string, meta store.ObjectMeta) (string, error) {
	// Shared bucketMu: RemoveBucket (which then aborts the bucket's
	// uploads) cannot run between the bucket check and the upload's birth.
	o.bucketMu.RLock()
	defer o.bucketMu.RUnlock()
	if err := o.checkTarget(bucket, key); err != nil {
		return "", err
	}
	if isFolderKey(key) {
		return "", fmt.Errorf("%w: %s/%s: a key ending in '/' cannot be uploaded in parts", store.ErrInvalidKey, bucket, key)
	}
	if err := o.checkParents(bucket, key); err != nil {
		return "", err
	}
	return o.uploads.Create(bucket, key, meta)
}

// checkParents fails if a directory above key is a file, so an upload the
// completion could not place is refused before its parts are sent. (The
// tree may still change before the completion, which then fails.)
func (o *Origin) checkParents(bucket, key string) error {
	br, err := o.openBucket(bucket)
	if err != nil {
		return err
	}
	defer br.Close()
	for dir := path.Dir(key); dir != "."; dir = path.Dir(dir) {
		fi, err := br.Stat(dir)
		if err == nil && !fi.IsDir() {
			return conflict(bucket, key)
		}
	}
	return nil
}

// PutPart stores one part of an upload.
func (o *Origin) PutPart(ctx context.Context, bucket, key, uploadID string, number int, body io.Reader, size int64) (store.PartInfo, error) {
	if err := o.checkUpload(bucket, key); err != nil {
		return store.PartInfo{}, err
	}
	return o.uploads.PutPart(ctx, bucket, key, uploadID, number, body, size)
}

// CompleteUpload joins the listed parts into bucket/key, replacing any
// object there atomically, and ends the upload. On failure the upload is
// left as it was.
func (o *Origin) CompleteUpload(ctx context.Context, bucket, key, uploadID string, list []store.CompletePart) (store.ObjectInfo, error) {
	if err := o.checkTarget(bucket, key); err != nil {
		return store.ObjectInfo{}, err
	}
	a, err := o.uploads.Assemble(bucket, key, uploadID, list)
	if err != nil {
		return store.ObjectInfo{}, err
	}
	info, err := o.commitAssembly(ctx, a)
	if err != nil {
		a.Close()
		return store.ObjectInfo{}, err
	}
	// The object is in place. A failed Remove leaves the upload open: a
	// retried completion writes the same object again.
	if err := a.Remove(); err != nil {
		return store.ObjectInfo{}, fmt.Errorf("fs: end upload %s: %w", uploadID, err)
	}
	return info, nil
}

// commitAssembly writes the joined parts of a as its object, all or
// nothing, the ETag being the multipart one.
func (o *Origin) commitAssembly(ctx context.Context, a *parts.Assembly) (store.ObjectInfo, error) {
	rc, err := a.Open(0, -1)
	if err != nil {
		return store.ObjectInfo{}, err
	}
	tmp, fi, _, err := o.stage(ctx, rc, a.Size)
	rc.Close()
	if err != nil {
		return store.ObjectInfo{}, fmt.Errorf("fs: complete %s/%s: %w", a.Bucket, a.Key, err)
	}
	defer o.root.Remove(tmp) // no-op once renamed
	sc := newSidecar(a.Key, fi.Size(), fi.ModTime(), a.ETag, a.Meta)
	for _, p := range a.Parts {
		sc.Parts = append(sc.Parts, p.Size)
	}
	scTmp, err := o.stageSidecar(sc)
	if err != nil {
		return store.ObjectInfo{}, err
	}
	defer o.root.Remove(scTmp)
	if err := o.commit(a.Bucket, a.Key, tmp, scTmp); err != nil {
		return store.ObjectInfo{}, err
	}
	return store.ObjectInfo{
		Bucket: a.Bucket, Key: a.Key, Size: fi.Size(), ETag: a.ETag,
		LastModified: fi.ModTime().UTC(), ObjectMeta: sc.meta(),
	}, nil
}

// AbortUpload ends an upload and drops its parts.
func (o *Origin) AbortUpload(ctx context.Context, bucket, key, uploadID string) error {
	if err := o.checkUpload(bucket, key); err != nil {
		return err
	}
	return o.uploads.Abort(bucket, key, uploadID)
}

// ListParts lists the parts of an upload.
func (o *Origin) ListParts(ctx context.Context, bucket, key, uploadID string, opts store.PartListOptions) (store.PartPage, error) {
	if err := o.checkUpload(bucket, key); err != nil {
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

// checkUpload validates the names of an upload's target and that its
// bucket exists.
func (o *Origin) checkUpload(bucket, key string) error {
	br, err := o.openKey(bucket, key)
	if err != nil {
		return err
	}
	return br.Close()
}
