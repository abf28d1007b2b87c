// The guarded origin's calls: each asks the breaker first, runs within its
// bound, and reports what the outcome says about the origin.
package guard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/granary-dev/granary/store"
)

// guarded is the guarded store.Origin; copier and multipart add the
// optional abilities (see Guard.Origin).
type guarded struct{ g *Guard }

var _ store.Origin = (*guarded)(nil)

// bounded runs f through the breaker with the whole call bounded by the
// timeout.
func (g *Guard) bounded(ctx context.Context, f func(context.Context) error) error {
	if err := g.admit(); err != nil {
		return err
	}
	cctx, cancel := context.WithTimeoutCause(ctx, g.opts.Timeout, errTimedOut)
	defer cancel()
	return g.outcome(ctx, cctx, f(cctx), nil)
}

// unbounded runs f through the breaker; the origin bounds it (a call with
// a body, or one a healthy origin may take long over). bodyFailed, if not
// nil, reports an error of the caller's body: a failure it caused says
// nothing about the origin.
func (g *Guard) unbounded(ctx context.Context, bodyFailed func() bool, f func(context.Context) error) error {
	if err := g.admit(); err != nil {
		return err
	}
	return g.outcome(ctx, ctx, f(ctx), bodyFailed)
}

// outcome records what err says about the origin and returns it; a call
// the guard timed out returns store.ErrUnavailable naming the timeout.
// ctx is the caller's, cctx the one the call ran with.
func (g *Guard) outcome(ctx, cctx context.Context, err error, bodyFailed func() bool) error {
	switch {
	case err == nil:
		g.answered()
	case ctx.Err() != nil || (bodyFailed != nil && bodyFailed()):
		// The caller gave up, or its body failed: nothing learnt.
	case context.Cause(cctx) == errTimedOut:
		err = fmt.Errorf("%w: %w within %v (%v)", store.ErrUnavailable, errTimedOut, g.opts.Timeout, err)
		g.failed(err, false)
	case errors.Is(err, store.ErrUnavailable):
		g.failed(err, false)
	default:
		g.answered() // an answer of the origin's own: NoSuchKey, AccessDenied...
	}
	return err
}

func (o *guarded) ListBuckets(ctx context.Context) (bs []store.BucketInfo, err error) {
	err = o.g.bounded(ctx, func(ctx context.Context) error { bs, err = o.g.inner.ListBuckets(ctx); return err })
	return bs, err
}

func (o *guarded) MakeBucket(ctx context.Context, bucket string) error {
	return o.g.bounded(ctx, func(ctx context.Context) error { return o.g.inner.MakeBucket(ctx, bucket) })
}

func (o *guarded) RemoveBucket(ctx context.Context, bucket string) error {
	return o.g.bounded(ctx, func(ctx context.Context) error { return o.g.inner.RemoveBucket(ctx, bucket) })
}

func (o *guarded) StatBucket(ctx context.Context, bucket string) error {
	return o.g.bounded(ctx, func(ctx context.Context) error { return o.g.inner.StatBucket(ctx, bucket) })
}

func (o *guarded) Stat(ctx context.Context, bucket, key string) (info store.ObjectInfo, err error) {
	err = o.g.bounded(ctx, func(ctx context.Context) error { info, err = o.g.inner.Stat(ctx, bucket, key); return err })
	return info, err
}

func (o *guarded) Delete(ctx context.Context, bucket, key string) error {
	return o.g.bounded(ctx, func(ctx context.Context) error { return o.g.inner.Delete(ctx, bucket, key) })
}

func (o *guarded) List(ctx context.Context, bucket string, opts store.ListOptions) (p store.ListPage, err error) {
	err = o.g.bounded(ctx, func(ctx context.Context) error { p, err = o.g.inner.List(ctx, bucket, opts); return err })
	return p, err
}

func (o *guarded) Put(ctx context.Context, bucket, key string, body io.Reader, size int64, meta store.ObjectMeta) (info store.ObjectInfo, err error) {
	b := &callerBody{r: body}
	err = o.g.unbounded(ctx, b.failed, func(ctx context.Context) error {
		info, err = o.g.inner.Put(ctx, bucket, key, b, size, meta)
		return err
	})
	return info, err
}

// Get bounds the wait for the answer, then each Read of the body (see
// watchedBody).
func (o *guarded) Get(ctx context.Context, bucket, key string, r store.ReadRange) (io.ReadCloser, store.ObjectInfo, error) {
	g := o.g
	if err := g.admit(); err != nil {
		return nil, store.ObjectInfo{}, err
	}
	cctx, cancel := context.WithCancelCause(ctx)
	timer := time.AfterFunc(g.opts.Timeout, func() { cancel(errTimedOut) })
	rc, info, err := g.inner.Get(cctx, bucket, key, r)
	timer.Stop()
	if err != nil {
		err = g.outcome(ctx, cctx, err, nil)
		cancel(nil)
		return nil, info, err
	}
	g.answered()
	return &watchedBody{ReadCloser: rc, g: g, parent: ctx, ctx: cctx, cancel: cancel, timer: timer}, info, nil
}

// callerBody is a Put's body, remembering whether reading it failed (a
// client that went away mid-upload is not the origin's fault). The
// transport may still read it after the Put returned, hence the atomic.
type callerBody struct {
	r   io.Reader
	bad atomic.Bool // a Read failed with an error other than io.EOF
}

func (b *callerBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF {
		b.bad.Store(true)
	}
	return n, err
}

func (b *callerBody) failed() bool { return b.bad.Load() }

// copier adds store.Copier to a guarded origin whose origin has it.
type copier struct{ g *Guard }

func (c copier) Copy(ctx context.Context, srcBucket, srcKey, dstBucket, dstKey string, meta *store.ObjectMeta) (info store.ObjectInfo, err error) {
	err = c.g.unbounded(ctx, nil, func(ctx context.Context) error {
		info, err = c.g.inner.(store.Copier).Copy(ctx, srcBucket, srcKey, dstBucket, dstKey, meta)
		return err
	})
	return info, err
}
