// Multipart uploads under the guard, for origins that have them.
package guard

import (
	"context"
	"io"

	"github.com/granary-dev/granary/store"
)

// multipart adds store.Multipart to a guarded origin whose origin has it.
type multipart struct{ g *Guard }

func (m multipart) mp() store.Multipart { return m.g.inner.(store.Multipart) }

func (m multipart) NewUpload(ctx context.Context, bucket, key string, meta store.ObjectMeta) (id string, err error) {
	err = m.g.bounded(ctx, func(ctx context.Context) error { id, err = m.mp().NewUpload(ctx, bucket, key, meta); return err })
	return id, err
}

func (m multipart) PutPart(ctx context.Context, bucket, key, uploadID string, number int, body io.Reader, size int64) (p store.PartInfo, err error) {
	b := &callerBody{r: body}
	err = m.g.unbounded(ctx, b.failed, func(ctx context.Context) error {
		p, err = m.mp().PutPart(ctx, bucket, key, uploadID, number, b, size)
		return err
	})
	return p, err
}

func (m multipart) CompleteUpload(ctx context.Context, bucket, key, uploadID string, parts []store.CompletePart) (info store.ObjectInfo, err error) {
	err = m.g.unbounded(ctx, nil, func(ctx context.Context) error {
		info, err = m.mp().CompleteUpload(ctx, bucket, key, uploadID, parts)
		return err
	})
	return info, err
}

func (m multipart) AbortUpload(ctx context.Context, bucket, key, uploadID string) error {
	return m.g.bounded(ctx, func(ctx context.Context) error { return m.mp().AbortUpload(ctx, bucket, key, uploadID) })
}

func (m multipart) ListParts(ctx context.Context, bucket, key, uploadID string, opts store.PartListOptions) (p store.PartPage, err error) {
	err = m.g.bounded(ctx, func(ctx context.Context) error {
		p, err = m.mp().ListParts(ctx, bucket, key, uploadID, opts)
		return err
	})
	return p, err
}

func (m multipart) ListUploads(ctx context.Context, bucket string, opts store.UploadListOptions) (p store.UploadPage, err error) {
	err = m.g.bounded(ctx, func(ctx context.Context) error { p, err = m.mp().ListUploads(ctx, bucket, opts); return err })
	return p, err
}
