// The uploader: workers that send pending operations to the origin, one
// operation of a key at a time (in order), different keys in parallel,
// retrying failures with exponential backoff.
package writeback

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/granary-dev/granary/store"
)

// worker uploads operations of queued keys until Close.
func (l *Log) worker() {
	defer l.wg.Done()
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		for !l.closed && len(l.queue) == 0 {
			l.work.Wait()
		}
		if l.closed {
			return
		}
		ks := l.queue[0]
		l.queue[0] = nil
		l.queue = l.queue[1:]
		ks.queued = false
		o := l.takeLocked(ks)
		if o == nil {
			continue
		}
		l.mu.Unlock()
		etag, err := l.upload(o)
		l.finish(ks, o, etag, err)
		l.mu.Lock()
	}
}

// takeLocked starts the upload of ks's waiting operation, if one may start:
// nothing of the key uploading, committing or written directly, and its
// retry time reached (whoever clears a condition queues the key again).
func (l *Log) takeLocked(ks *keyState) *op {
	o := ks.next
	if o == nil || ks.cur != nil || ks.committing > 0 || ks.direct > 0 {
		return nil
	}
	if time.Now().Before(o.notBefore) {
		return nil // its retry timer queues it again
	}
	ks.next, ks.cur = nil, o
	return o
}

// upload sends o to the origin and returns the origin's ETag (puts).
func (l *Log) upload(o *op) (string, error) {
	ctx := l.ctx
	switch {
	case o.Kind == kindDelete:
		err := l.origin.Delete(ctx, o.Bucket, o.Key)
		if errors.Is(err, store.ErrNoSuchBucket) {
			err = nil // no bucket, no key: the delete holds
		}
		return "", err
	case o.Multipart && l.mp != nil:
		return l.uploadParts(ctx, o)
	}
	rc, err := o.asm.Open(0, -1)
	if err != nil {
		return "", fmt.Errorf("%w: %v", errStageLost, err)
	}
	defer rc.Close()
	info, err := l.origin.Put(ctx, o.Bucket, o.Key, l.held(ctx, rc), o.Info.Size, o.Info.ObjectMeta)
	return info.ETag, err
}

// errStageLost marks an upload whose staged bytes cannot be read.
var errStageLost = errors.New("writeback: staged object unreadable")

// permanent reports whether retrying cannot fix err.
func permanent(err error) bool {
	for _, p := range []error{store.ErrNoSuchBucket, store.ErrAccessDenied, store.ErrInvalidKey,
		store.ErrInvalidBucketName, errStageLost} {
		if errors.Is(err, p) {
			return true
		}
	}
	return false
}

// finish records the outcome of o's upload.
func (l *Log) finish(ks *keyState, o *op, etag string, err error) {
	if err == nil {
		l.landed(ks, o, etag)
		return
	}
	l.mu.Lock()
	if l.closed {
		// Cancelled by Close: it stays journaled for the next Open.
		ks.cur = nil
		if ks.next == nil {
			ks.next = o
		}
		l.mu.Unlock()
		return
	}
	o.attempts++
	o.lastErr = err
	o.failed = nil
	l.attempts++
	if permanent(err) {
		o.failed, o.failedAt = err, l.attempts
		if errors.Is(err, store.ErrNoSuchBucket) {
			delete(l.known, o.Bucket)
		}
	}
	l.m.uploadFailed(o)
	ks.cur = nil
	if newer := ks.next; newer != nil {
		// Superseded while it was uploading: the newer op stands for it.
		newer.floor = min(newer.floor, o.floor)
		remove := l.dropLocked(o)
		l.enqueueLocked(ks)
		l.notifyLocked()
		l.mu.Unlock()
		if err := l.journalDelete(o.Seq); err != nil {
			l.log.Warn().Err(err).Msg("writeback: delete superseded record")
		}
		l.removeStage(remove)
		return
	}
	ks.next = o
	wait := l.backoff(o)
	o.notBefore = time.Now().Add(wait)
	l.retryAfterLocked(ks, wait)
	l.notifyLocked()
	l.mu.Unlock()
	ev := l.log.Warn()
	if o.failed != nil {
		ev = l.log.Error()
	}
	ev.Err(err).Str("bucket", o.Bucket).Str("key", o.Key).Str("op", o.Kind).
		Int("attempts", o.attempts).Dur("retry_in", wait).Bool("permanent", o.failed != nil).
		Msg("writeback: upload failed")
}

// backoff returns the wait before o's next attempt: RetryMin doubled per
// failed attempt, at most RetryMax, with ±20% jitter; RetryMax for a
// permanent failure.
func (l *Log) backoff(o *op) time.Duration {
	if o.failed != nil {
		return l.opts.RetryMax
	}
	d := l.opts.RetryMin
	for i := 1; i < o.attempts && d < l.opts.RetryMax; i++ {
		d *= 2
	}
	d = min(d, l.opts.RetryMax)
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// retryAfterLocked queues ks again after d.
func (l *Log) retryAfterLocked(ks *keyState, d time.Duration) {
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(l.timers, t)
		l.enqueueLocked(ks)
	})
	l.timers[t] = struct{}{}
}

// landed records that o reached the origin: its record is deleted, it is
// no longer pending, and its staged copy goes.
func (l *Log) landed(ks *keyState, o *op, etag string) {
	if err := l.journalDelete(o.Seq); err != nil {
		// The origin has it; a replay would only upload it again, and
		// only if no newer operation of the key supersedes it.
		l.log.Error().Err(err).Str("bucket", o.Bucket).Str("key", o.Key).
			Msg("writeback: delete record of an uploaded object")
	}
	l.mu.Lock()
	ks.cur = nil
	remove := l.dropLocked(o)
	l.enqueueLocked(ks)
	l.tidyLocked(ks)
	l.notifyLocked()
	l.mu.Unlock()
	l.m.uploadOK(o)
	l.removeStage(remove)
	if o.Kind == kindPut {
		l.persisted(o, etag)
	}
}

// partUploads is how many parts of one object upload at once.
const partUploads = 4

// abortTimeout bounds the abort of a failed origin upload, which runs even
// when the upload was cancelled.
const abortTimeout = 30 * time.Second

// uploadParts sends a multipart op as a multipart upload of the origin
// with the same parts (numbers and bytes), so the origin's ETag is the one
// the Log served. A failed upload is aborted at the origin.
func (l *Log) uploadParts(ctx context.Context, o *op) (etag string, err error) {
	id, err := l.mp.NewUpload(ctx, o.Bucket, o.Key, o.Info.ObjectMeta)
	if err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
			defer cancel()
			if aerr := l.mp.AbortUpload(actx, o.Bucket, o.Key, id); aerr != nil {
				l.log.Warn().Err(aerr).Str("bucket", o.Bucket).Str("key", o.Key).
					Msg("writeback: abort failed origin upload")
			}
		}
	}()
	done := make([]store.CompletePart, len(o.Parts))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(partUploads)
	off := int64(0)
	for i, p := range o.Parts {
		start := off
		off += p.Size
		g.Go(func() error {
			rc, err := o.asm.Open(start, p.Size)
			if err != nil {
				return fmt.Errorf("%w: %v", errStageLost, err)
			}
			defer rc.Close()
			pi, err := l.mp.PutPart(gctx, o.Bucket, o.Key, id, p.Number, l.held(gctx, rc), p.Size)
			if err != nil {
				return err
			}
			done[i] = store.CompletePart{Number: p.Number, ETag: pi.ETag}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return "", err
	}
	info, err := l.mp.CompleteUpload(ctx, o.Bucket, o.Key, id, done)
	if err != nil {
		return "", err
	}
	return info.ETag, nil
}
