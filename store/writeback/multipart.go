// Multipart uploads. In a write-back bucket an upload lives in the stage
// store and its completion is a staged object uploaded later with the same
// parts; elsewhere the calls pass through to the origin. Calls naming an
// upload ID go where the upload lives, whatever the bucket's mode is now.
package writeback

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/granary-dev/granary/store"
)

// errNoMultipart is returned for pass-through multipart calls when the
// origin has no multipart upload.
var errNoMultipart = fmt.Errorf("writeback: the origin has no multipart upload: %w", errors.ErrUnsupported)

// wbUpload is an open write-back upload: the sizes of its parts, which
// are counted in Log.dirty. Guarded by Log.mu.
type wbUpload struct {
	parts map[int]int64
	gone  bool // completed or aborted: its bytes are no longer counted here
}

// bytes returns the bytes counted for u.
func (u *wbUpload) bytes() int64 {
	var n int64
	for _, s := range u.parts {
		n += s
	}
	return n
}

// wbLookup returns the write-back upload id, or nil if the stage does not
// know it (it is the origin's). An upload left by an earlier process is
// adopted: its parts are counted as dirty.
func (l *Log) wbLookup(bucket, key, id string) *wbUpload {
	l.mu.Lock()
	u := l.uploads[id]
	l.mu.Unlock()
	if u != nil {
		return u
	}
	sizes := make(map[int]int64)
	opts := store.PartListOptions{}
	for {
		page, err := l.stage.ListParts(bucket, key, id, opts)
		if err != nil {
			return nil
		}
		for _, p := range page.Parts {
			sizes[p.Number] = p.Size
		}
		if !page.IsTruncated {
			break
		}
		opts.After = page.NextAfter
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if u := l.uploads[id]; u != nil {
		return u
	}
	u = &wbUpload{parts: sizes}
	l.uploads[id] = u
	l.dirty += u.bytes()
	return u
}

func (l *Log) NewUpload(ctx context.Context, bucket, key string, meta store.ObjectMeta) (string, error) {
	if !l.writeBack(bucket) {
		if l.mp == nil {
			return "", errNoMultipart
		}
		return l.mp.NewUpload(ctx, bucket, key, meta)
	}
	if err := validKey(key); err != nil {
		return "", err
	}
	if err := l.checkBucket(ctx, bucket); err != nil {
		return "", err
	}
	done, err := l.enter()
	if err != nil {
		return "", err
	}
	defer done()
	id, err := l.stage.Create(bucket, key, meta.Normalized())
	if err != nil {
		return "", err
	}
	l.mu.Lock()
	l.uploads[id] = &wbUpload{parts: make(map[int]int64)}
	l.mu.Unlock()
	return id, nil
}

func (l *Log) PutPart(ctx context.Context, bucket, key, uploadID string, number int, body io.Reader, size int64) (store.PartInfo, error) {
	done, err := l.enter()
	if err != nil {
		return store.PartInfo{}, err
	}
	defer done()
	u := l.wbLookup(bucket, key, uploadID)
	if u == nil {
		if l.mp == nil {
			return store.PartInfo{}, errNoMultipart
		}
		return l.mp.PutPart(ctx, bucket, key, uploadID, number, body, size)
	}
	if size >= 0 {
		if err := l.reserve(size); err != nil {
			return store.PartInfo{}, fmt.Errorf("writeback: part %d of %s/%s (%d bytes): %w", number, bucket, key, size, err)
		}
	} else {
		f, n, err := l.spool(ctx, body)
		if err != nil {
			l.release(n)
			return store.PartInfo{}, fmt.Errorf("writeback: part %d of %s/%s: %w", number, bucket, key, err)
		}
		defer f.Close()
		body, size = f, n
	}
	pi, err := l.stage.PutPart(ctx, bucket, key, uploadID, number, body, size)
	if err != nil {
		l.release(size)
		return store.PartInfo{}, err
	}
	l.mu.Lock()
	if u.gone {
		l.dirty -= size // completed or aborted meanwhile: not counted there
	} else {
		l.dirty -= u.parts[number] // the part it replaced
		u.parts[number] = size
	}
	l.mu.Unlock()
	return pi, nil
}

// forgetUploadLocked stops counting the parts of u and returns their bytes
// (the caller decides how many of them stay dirty).
func (l *Log) forgetUploadLocked(id string, u *wbUpload) int64 {
	if u.gone {
		return 0
	}
	u.gone = true
	delete(l.uploads, id)
	return u.bytes()
}

func (l *Log) CompleteUpload(ctx context.Context, bucket, key, uploadID string, parts []store.CompletePart) (store.ObjectInfo, error) {
	done, err := l.enter()
	if err != nil {
		return store.ObjectInfo{}, err
	}
	defer done()
	u := l.wbLookup(bucket, key, uploadID)
	if u == nil {
		if l.mp == nil {
			return store.ObjectInfo{}, errNoMultipart
		}
		var info store.ObjectInfo
		err := l.direct(ctx, bucket, key, func() (err error) {
			info, err = l.mp.CompleteUpload(ctx, bucket, key, uploadID, parts)
			return err
		})
		return info, err
	}
	asm, err := l.stage.Assemble(bucket, key, uploadID, parts)
	if err != nil {
		return store.ObjectInfo{}, err
	}
	if err := asm.Seal(); err != nil {
		asm.Close()
		return store.ObjectInfo{}, err
	}
	// The upload's bytes become the object's: the listed parts stay
	// dirty, the others were deleted by Seal.
	l.mu.Lock()
	l.dirty -= l.forgetUploadLocked(uploadID, u) - asm.Size
	l.mu.Unlock()
	o := &op{record: record{
		Kind: kindPut, Bucket: bucket, Key: key, StageID: uploadID, Multipart: true, Parts: asm.Parts,
		Info: store.ObjectInfo{
			Bucket: bucket, Key: key, Size: asm.Size, ETag: asm.ETag,
			LastModified: time.Now().UTC(), ObjectMeta: asm.Meta,
		},
	}, asm: asm, dirty: asm.Size}
	if err := l.replicate(ctx, o); err != nil {
		asm.Remove()
		l.release(asm.Size)
		return store.ObjectInfo{}, err
	}
	if err := l.install(o); err != nil {
		asm.Remove()
		l.release(asm.Size)
		return store.ObjectInfo{}, err
	}
	return servedInfo(o), nil
}

func (l *Log) AbortUpload(ctx context.Context, bucket, key, uploadID string) error {
	done, err := l.enter()
	if err != nil {
		return err
	}
	defer done()
	u := l.wbLookup(bucket, key, uploadID)
	if u == nil {
		if l.mp == nil {
			return errNoMultipart
		}
		return l.mp.AbortUpload(ctx, bucket, key, uploadID)
	}
	if err := l.stage.Abort(bucket, key, uploadID); err != nil {
		return err
	}
	l.mu.Lock()
	l.dirty -= l.forgetUploadLocked(uploadID, u)
	l.mu.Unlock()
	return nil
}

func (l *Log) ListParts(ctx context.Context, bucket, key, uploadID string, opts store.PartListOptions) (store.PartPage, error) {
	done, err := l.enter()
	if err != nil {
		return store.PartPage{}, err
	}
	defer done()
	if u := l.wbLookup(bucket, key, uploadID); u != nil {
		return l.stage.ListParts(bucket, key, uploadID, opts)
	}
	if l.mp == nil {
		return store.PartPage{}, errNoMultipart
	}
	return l.mp.ListParts(ctx, bucket, key, uploadID, opts)
}

// ListUploads lists the uploads of the bucket's current mode: the stage's
// in a write-back bucket, else the origin's. (Uploads begun before the
// bucket's mode changed go on working by ID but are not listed.)
func (l *Log) ListUploads(ctx context.Context, bucket string, opts store.UploadListOptions) (store.UploadPage, error) {
	if l.writeBack(bucket) {
		if err := l.checkBucket(ctx, bucket); err != nil {
			return store.UploadPage{}, err
		}
		done, err := l.enter()
		if err != nil {
			return store.UploadPage{}, err
		}
		defer done()
		return l.stage.ListUploads(bucket, opts)
	}
	if l.mp == nil {
		return store.UploadPage{}, errNoMultipart
	}
	return l.mp.ListUploads(ctx, bucket, opts)
}
