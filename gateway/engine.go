// Package gateway is Granary's caching engine: it answers S3 operations from
// the cache tiers where it can and from the origin where it must, with no
// knowledge of HTTP.
package gateway

import (
	"context"
	"errors"
	"io"

	"github.com/granary-dev/granary/store"
)

// ErrInvalidRange means a range does not overlap the object.
var ErrInvalidRange = errors.New("gateway: range not satisfiable")

// Range is a parsed HTTP byte range. Exactly one form is used:
// Suffix > 0 means the last Suffix bytes; otherwise Start..End inclusive,
// with End < 0 meaning to the end of the object.
type Range struct {
	Start, End int64
	Suffix     int64
}

// Resolve returns the offset and length r selects in an object of size
// bytes, or ErrInvalidRange.
func (r Range) Resolve(size int64) (off, n int64, err error) {
	if r.Suffix > 0 {
		if size == 0 {
			return 0, 0, ErrInvalidRange
		}
		n = min(r.Suffix, size)
		return size - n, n, nil
	}
	if r.Start < 0 || r.Start >= size || (r.End >= 0 && r.End < r.Start) {
		return 0, 0, ErrInvalidRange
	}
	end := size - 1
	if r.End >= 0 && r.End < end {
		end = r.End
	}
	return r.Start, end - r.Start + 1, nil
}

// GetOptions shape a Get. Check, if set, runs on the object's info before
// any body byte is read; its error is returned as is (conditional headers).
type GetOptions struct {
	Range *Range
	Check func(store.ObjectInfo) error
}

// Object is an open object body. Offset and Length give the bytes it
// yields (the whole object when no range was asked). The caller must Close.
type Object struct {
	Info   store.ObjectInfo
	Offset int64
	Length int64
	io.ReadCloser
}

// Engine is the caching engine. It is safe for concurrent use.
type Engine struct {
	opts   Options
	origin store.Origin
}

// New returns an Engine over opts.
func New(opts Options) (*Engine, error) {
	opts, err := opts.normalize()
	if err != nil {
		return nil, err
	}
	return &Engine{opts: opts, origin: opts.Origin}, nil
}

// Close releases the engine (not its origin or tiers, which the caller owns).
func (e *Engine) Close() error { return nil }

// ListBuckets lists the origin's buckets.
func (e *Engine) ListBuckets(ctx context.Context) ([]store.BucketInfo, error) {
	return e.origin.ListBuckets(ctx)
}

// CreateBucket creates a bucket at the origin.
func (e *Engine) CreateBucket(ctx context.Context, bucket string) error {
	return e.origin.MakeBucket(ctx, bucket)
}

// DeleteBucket removes an empty bucket at the origin.
func (e *Engine) DeleteBucket(ctx context.Context, bucket string) error {
	return e.origin.RemoveBucket(ctx, bucket)
}

// HeadBucket returns nil if the bucket exists.
func (e *Engine) HeadBucket(ctx context.Context, bucket string) error {
	return e.origin.StatBucket(ctx, bucket)
}

// Head returns an object's info.
func (e *Engine) Head(ctx context.Context, bucket, key string) (store.ObjectInfo, error) {
	return e.origin.Stat(ctx, bucket, key)
}

// Get opens an object (or the range of it opts ask for).
func (e *Engine) Get(ctx context.Context, bucket, key string, opts GetOptions) (*Object, error) {
	info, err := e.origin.Stat(ctx, bucket, key)
	if err != nil {
		return nil, err
	}
	if opts.Check != nil {
		if err := opts.Check(info); err != nil {
			return nil, err
		}
	}
	off, n := int64(0), info.Size
	if opts.Range != nil {
		if off, n, err = opts.Range.Resolve(info.Size); err != nil {
			return nil, err
		}
	}
	rc, _, err := e.origin.Get(ctx, bucket, key, store.ReadRange{Offset: off, Length: n, ETag: info.ETag})
	if err != nil {
		return nil, err
	}
	return &Object{Info: info, Offset: off, Length: n, ReadCloser: rc}, nil
}

// Put writes an object through to the origin; it returns once the origin
// has accepted it.
func (e *Engine) Put(ctx context.Context, bucket, key string, body io.Reader, size int64, meta store.ObjectMeta) (store.ObjectInfo, error) {
	return e.origin.Put(ctx, bucket, key, body, size, meta)
}

// Copy copies an object at the origin. A nil meta keeps the source's.
func (e *Engine) Copy(ctx context.Context, srcBucket, srcKey, dstBucket, dstKey string, meta *store.ObjectMeta) (store.ObjectInfo, error) {
	if c, ok := e.origin.(store.Copier); ok {
		return c.Copy(ctx, srcBucket, srcKey, dstBucket, dstKey, meta)
	}
	return store.ObjectInfo{}, errors.New("gateway: origin cannot copy")
}

// Delete removes an object at the origin and from the cache.
func (e *Engine) Delete(ctx context.Context, bucket, key string) error {
	return e.origin.Delete(ctx, bucket, key)
}

// List returns one page of a bucket listing.
func (e *Engine) List(ctx context.Context, bucket string, opts store.ListOptions) (store.ListPage, error) {
	return e.origin.List(ctx, bucket, opts)
}
