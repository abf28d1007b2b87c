// Multipart uploads: the engine checks a bucket's mode (writepolicy.go),
// passes the upload to the origin's store.Multipart (the origin, or the
// write-back log in front of it), and invalidates what it cached of the
// key once the object is complete.
package gateway

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/granary-dev/granary/store"
)

// ErrMultipartUnsupported means the origin takes no multipart uploads.
var ErrMultipartUnsupported = errors.New("gateway: origin cannot take multipart uploads")

// multipart returns the origin's multipart ability.
func (e *Engine) multipart() (store.Multipart, error) {
	mp, ok := e.opts.Origin.(store.Multipart)
	if !ok {
		return nil, ErrMultipartUnsupported
	}
	return mp, nil
}

// observe counts and times one origin call made outside countingOrigin.
func (e *Engine) observe(op string, start time.Time, err error) {
	countingOrigin{m: e.m}.observe(op, start, err)
}

// CreateUpload starts a multipart upload of bucket/key.
func (e *Engine) CreateUpload(ctx context.Context, bucket, key string, meta store.ObjectMeta) (string, error) {
	if err := e.writable(bucket); err != nil {
		return "", err
	}
	mp, err := e.multipart()
	if err != nil {
		return "", err
	}
	start := time.Now()
	id, err := mp.NewUpload(ctx, bucket, key, meta)
	e.observe("new_upload", start, err)
	if t := e.teeing(bucket); t != nil && err == nil {
		t.startTee(bucket, key, id, meta)
	}
	return id, err
}

// UploadPart stores one part of an upload from exactly size bytes of body.
func (e *Engine) UploadPart(ctx context.Context, bucket, key, uploadID string, number int, body io.Reader, size int64) (store.PartInfo, error) {
	if err := e.writable(bucket); err != nil {
		return store.PartInfo{}, err
	}
	if number < 1 || number > store.MaxPartNumber {
		return store.PartInfo{}, store.ErrInvalidPartNumber
	}
	mp, err := e.multipart()
	if err != nil {
		return store.PartInfo{}, err
	}
	defer e.writeStarted()()
	finish := func(string, error) {}
	if t := e.teeing(bucket); t != nil {
		body, finish = t.teePart(bucket, key, uploadID, number, body, size)
	}
	start := time.Now()
	p, err := mp.PutPart(ctx, bucket, key, uploadID, number, body, size)
	e.observe("put_part", start, err)
	finish(p.ETag, err)
	return p, err
}

// CompleteUpload joins the listed parts into the object. Whatever was
// cached of the key is dropped, whether or not the completion succeeded
// (a failed one may have replaced the object at the origin all the same).
func (e *Engine) CompleteUpload(ctx context.Context, bucket, key, uploadID string, parts []store.CompletePart) (store.ObjectInfo, error) {
	if err := e.writable(bucket); err != nil {
		return store.ObjectInfo{}, err
	}
	if err := store.CheckCompletion(parts); err != nil {
		return store.ObjectInfo{}, err
	}
	mp, err := e.multipart()
	if err != nil {
		return store.ObjectInfo{}, err
	}
	end := e.writes.begin(metaKey(bucket, key))
	defer end()
	start := time.Now()
	info, err := mp.CompleteUpload(ctx, bucket, key, uploadID, parts)
	e.observe("complete_upload", start, err)
	if errors.Is(err, store.ErrNoSuchUpload) {
		if done, ok := e.completedAgain(ctx, bucket, key, uploadID, parts); ok {
			return done, nil
		}
	}
	if err != nil {
		e.invalidate(ctx, bucket, key, nil)
		return info, err
	}
	info.Bucket, info.Key = bucket, key
	e.finished.add(uploadID, info)
	t := e.teeing(bucket)
	e.invalidate(ctx, bucket, key, e.writtenHere(info, t != nil && t.lookup(uploadID) != ""))
	e.recordWrite(info)
	e.rememberWrite(info, end())
	if t != nil {
		e.completed(t, uploadID, parts, info, false)
	}
	e.fillWriteBack(info)
	return info, nil
}

// completedAgain answers a completion of an upload the origin no longer
// knows, as S3 does when the first answer was lost: 200 with the object
// the first completion made, if bucket/key is still that object. This
// node may remember the completion; if not (another node or an earlier
// run of this one completed it), the object is taken to be the one the
// listed parts made when its ETag is theirs (MultipartETag).
func (e *Engine) completedAgain(ctx context.Context, bucket, key, uploadID string, parts []store.CompletePart) (store.ObjectInfo, bool) {
	done, remembered := e.finished.lookup(bucket, key, uploadID)
	if !remembered {
		etags := make([]string, len(parts))
		for i, p := range parts {
			etags[i] = p.ETag
		}
		etag, err := store.MultipartETag(etags)
		if err != nil {
			return store.ObjectInfo{}, false
		}
		done.ETag = etag
	}
	cur, err := e.HeadFresh(ctx, bucket, key)
	if err != nil || cur.ETag != done.ETag {
		return store.ObjectInfo{}, false
	}
	if !remembered {
		return cur, true
	}
	return done, true
}

// AbortUpload ends an upload and drops its parts.
func (e *Engine) AbortUpload(ctx context.Context, bucket, key, uploadID string) error {
	if err := e.writable(bucket); err != nil {
		return err
	}
	mp, err := e.multipart()
	if err != nil {
		return err
	}
	start := time.Now()
	err = mp.AbortUpload(ctx, bucket, key, uploadID)
	e.observe("abort_upload", start, err)
	if e.tees != nil && err == nil {
		if id := e.tees.take(uploadID); id != "" {
			e.tees.store.Remove(id)
		}
	}
	return err
}

// ListParts lists the parts of an upload.
func (e *Engine) ListParts(ctx context.Context, bucket, key, uploadID string, opts store.PartListOptions) (store.PartPage, error) {
	mp, err := e.multipart()
	if err != nil {
		return store.PartPage{}, err
	}
	start := time.Now()
	page, err := mp.ListParts(ctx, bucket, key, uploadID, opts)
	e.observe("list_parts", start, err)
	return page, err
}

// ListUploads lists a bucket's uploads in progress.
func (e *Engine) ListUploads(ctx context.Context, bucket string, opts store.UploadListOptions) (store.UploadPage, error) {
	mp, err := e.multipart()
	if err != nil {
		return store.UploadPage{}, err
	}
	start := time.Now()
	page, err := mp.ListUploads(ctx, bucket, opts)
	e.observe("list_uploads", start, err)
	return page, err
}
