// Write-back hooks of the engine: flushing a prefix to the origin, and
// keeping cached metadata true when an upload gives an object another ETag.
package gateway

import (
	"context"
	"io"

	"github.com/granary-dev/granary/store"
)

// FlushStatus is a flush's progress (see store.Staging.Flush).
type FlushStatus = store.FlushStatus

// Flush waits until every write under bucket/prefix accepted so far is at
// the origin, reporting progress. Without a write-back log it returns at
// once: every write already is.
func (e *Engine) Flush(ctx context.Context, bucket, prefix string, progress func(FlushStatus)) error {
	if e.opts.Staging != nil {
		return e.opts.Staging.Flush(ctx, bucket, prefix, progress)
	}
	return nil
}

// WriteBackObserver is the engine as an observer of the write-back log
// (register it with the log, Options.Staging).
func (e *Engine) WriteBackObserver() store.StageObserver { return uploads{e} }

// uploads observes the write-back log for an engine.
type uploads struct{ e *Engine }

// Staged needs nothing of the engine: the write fills the cache itself.
func (uploads) Staged(context.Context, store.ObjectInfo, func() (io.ReadCloser, error)) error {
	return nil
}

// Persisted keeps the cache true to the origin. An origin that named the
// uploaded object with an ETag other than the one served while it was
// staged has made the cached metadata and chunks of that ETag a dead
// version: they are dropped, and the next read fetches the object under its
// new name. Origins keep the served ETag (a PUT of up to 5 GiB goes whole, a
// multipart upload with the client's parts); it changes only where one
// PUT cannot carry the object (a copy of more than 5 GiB staged as one
// object) or the origin names objects otherwise than by MD5 (S3 with
// SSE-KMS).
func (u uploads) Persisted(staged store.ObjectInfo, originETag string) {
	e := u.e
	if originETag != "" && originETag != staged.ETag {
		e.log.Info().Str("bucket", staged.Bucket).Str("key", staged.Key).
			Str("staged_etag", staged.ETag).Str("origin_etag", originETag).
			Msg("origin renamed an uploaded object; dropping its cached copy")
		e.invalidate(context.Background(), staged.Bucket, staged.Key, nil)
	}
}
