// Streaming uploads to an S3 origin: a body of known size up to
// MaxSinglePut (5 GiB) as one PUT, so the origin names it by its MD5 as S3
// names a client's PUT (the write-back log serves that ETag before the
// origin has the object); multipart beyond, and for a body of unknown size
// longer than one part. The body is never held whole in memory, and any
// failed upload is aborted so nothing (not even invisible parts) stays
// behind.
package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/granary-dev/granary/store"
)

// abortTimeout bounds the clean-up of a failed multipart upload, which
// runs even when the caller's context is done.
const abortTimeout = 30 * time.Second

// Put uploads body as bucket/key. A body that fails or ends before size
// leaves nothing: a single PUT is refused by the server when the request
// breaks, a multipart upload is aborted.
func (o *Origin) Put(ctx context.Context, bucket, key string, body io.Reader, size int64, meta store.ObjectMeta) (store.ObjectInfo, error) {
	if err := checkNames(bucket, key); err != nil {
		return store.ObjectInfo{}, err
	}
	if isBlank(key) {
		return o.blankPut(ctx, bucket, key, body, size, meta)
	}
	br := &bodyCounter{r: body, left: size}
	opts := putOptions(meta)
	var etag string
	var err error
	switch {
	case size >= 0 && size <= o.opts.MaxSinglePut:
		etag, err = o.putSingle(ctx, bucket, key, br, size, opts)
	case size >= 0:
		etag, err = o.putKnown(ctx, bucket, key, br, size, opts)
	default:
		etag, size, err = o.putUnknown(ctx, bucket, key, br, opts)
	}
	if err != nil {
		if berr := br.failure(); berr != nil {
			return store.ObjectInfo{}, fmt.Errorf("s3: put %s/%s: %w", bucket, key, berr)
		}
		return store.ObjectInfo{}, o.payloadHint(wrap(ctx, "put", bucket, key, err), err)
	}
	return store.ObjectInfo{
		Bucket: bucket, Key: key, Size: size, ETag: strings.Trim(etag, `"`),
		// A PUT response carries no Last-Modified; Stat gives the origin's.
		LastModified: time.Now().UTC(),
		ObjectMeta:   meta.Normalized(),
	}, nil
}

// putSingle sends r (exactly size bytes) in one PUT, streamed: over HTTP
// minio-go signs it chunk by chunk as it reads (aws-chunked, 64 KiB at a
// time), over HTTPS it sends it unsigned (UNSIGNED-PAYLOAD); either way
// r is read once and never buffered whole. With PayloadCRC32C it goes
// unsigned with a trailing CRC32C instead (checksum.go). A reader that is not an
// io.Seeker (bodyCounter) is not retried by minio-go.
func (o *Origin) putSingle(ctx context.Context, bucket, key string, r io.Reader, size int64, opts minio.PutObjectOptions) (string, error) {
	info, err := o.core.PutObject(ctx, bucket, key, r, size, "", "", o.putOptionsFor(opts))
	return info.ETag, err
}

// putKnown streams size bytes (more than one PUT takes) as parts read
// straight from the body: no buffering, so a part cannot be retried, and
// a failure fails the Put.
func (o *Origin) putKnown(ctx context.Context, bucket, key string, br *bodyCounter, size int64, opts minio.PutObjectOptions) (string, error) {
	partSize := max(o.opts.PartSize, (size+maxParts-1)/maxParts)
	next := func(ctx context.Context, num int) (io.Reader, int64, error) {
		off := int64(num-1) * partSize
		if off >= size {
			return nil, 0, io.EOF
		}
		n := min(partSize, size-off)
		return io.LimitReader(br, n), n, nil
	}
	return o.multipart(ctx, bucket, key, opts, next)
}

// putUnknown reads the body a part at a time into a pooled buffer. A body
// that ends within the first part goes as one PUT (retryable, since the
// buffer is seekable).
func (o *Origin) putUnknown(ctx context.Context, bucket, key string, br *bodyCounter, opts minio.PutObjectOptions) (string, int64, error) {
	bp := o.parts.Get().(*[]byte)
	defer o.parts.Put(bp)
	buf := *bp
	n, err := io.ReadFull(br, buf)
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		etag, err := o.putSingle(ctx, bucket, key, bytes.NewReader(buf[:n]), int64(n), o.checksumHeader(opts, buf[:n]))
		return etag, int64(n), err
	}
	if err != nil {
		return "", 0, err
	}
	pending := true // buf holds the first part
	next := func(ctx context.Context, num int) (io.Reader, int64, error) {
		if num > maxParts {
			return nil, 0, fmt.Errorf("s3: object of unknown size exceeds %d parts of %d bytes", maxParts, len(buf))
		}
		if pending {
			pending = false
			return bytes.NewReader(buf), int64(len(buf)), nil
		}
		n, err := io.ReadFull(br, buf)
		switch {
		case err == io.EOF:
			return nil, 0, io.EOF
		case err != nil && err != io.ErrUnexpectedEOF:
			return nil, 0, err
		}
		return bytes.NewReader(buf[:n]), int64(n), nil
	}
	etag, err := o.multipart(ctx, bucket, key, opts, next)
	return etag, br.read, err
}

// partSource returns part num (from 1): its reader and length, or io.EOF
// when there are no more parts.
type partSource func(ctx context.Context, num int) (io.Reader, int64, error)

// multipart uploads the parts next yields, one after the other, and
// completes the upload; on any failure it aborts it.
func (o *Origin) multipart(ctx context.Context, bucket, key string, opts minio.PutObjectOptions, next partSource) (etag string, err error) {
	id, err := o.core.NewMultipartUpload(ctx, bucket, key, opts)
	if err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
			defer cancel()
			o.core.AbortMultipartUpload(actx, bucket, key, id)
		}
	}()
	var parts []minio.CompletePart
	for num := 1; ; num++ {
		r, n, err := next(ctx, num)
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", err
		}
		body, popts := o.partBody(r)
		p, err := o.core.PutObjectPart(ctx, bucket, key, id, num, body, n, popts)
		if err != nil {
			return "", err
		}
		parts = append(parts, minio.CompletePart{PartNumber: num, ETag: p.ETag})
	}
	info, err := o.core.CompleteMultipartUpload(ctx, bucket, key, id, parts, minio.PutObjectOptions{})
	return info.ETag, err
}

// putOptions carries meta as request headers. User metadata names get
// their x-amz-meta- prefix here, so minio-go never mistakes a name like
// "x-amz-acl" for a header of its own.
func putOptions(meta store.ObjectMeta) minio.PutObjectOptions {
	meta = meta.Normalized()
	opts := minio.PutObjectOptions{
		ContentType:        meta.ContentType,
		ContentEncoding:    meta.ContentEncoding,
		ContentDisposition: meta.ContentDisposition,
		ContentLanguage:    meta.ContentLanguage,
		CacheControl:       meta.CacheControl,
		UserTags:           meta.Tags,
	}
	if t, err := http.ParseTime(meta.Expires); err == nil {
		opts.Expires = t
	}
	if len(meta.User) > 0 {
		opts.UserMetadata = make(map[string]string, len(meta.User))
		for k, v := range meta.User {
			opts.UserMetadata["x-amz-meta-"+k] = v
		}
	}
	return opts
}

// errShortBody makes the HTTP request fail when the body ends early, so
// the server never sees a complete request.
var errShortBody = errors.New("body ended before its declared size")

// bodyCounter reads a Put body, yields at most the declared size (left;
// -1 when unknown) and remembers why the body stopped, so the Put can
// tell a broken body from a broken origin.
type bodyCounter struct {
	r     io.Reader
	left  int64
	read  int64
	err   error // the body's own error, other than io.EOF
	short bool  // the body ended with bytes still owed
}

func (b *bodyCounter) Read(p []byte) (int, error) {
	if b.left == 0 {
		return 0, io.EOF
	}
	if b.left > 0 && int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.read += int64(n)
	if b.left > 0 {
		b.left -= int64(n)
	}
	switch {
	case err == io.EOF && b.left > 0:
		b.short = true
		return n, errShortBody
	case err != nil && err != io.EOF:
		b.err = err
	}
	return n, err
}

// failure returns why the body stopped early (a body error, or
// ErrIncompleteBody), or nil if the body was not at fault.
func (b *bodyCounter) failure() error {
	switch {
	case b.err != nil:
		return fmt.Errorf("read body: %w", b.err)
	case b.short:
		return fmt.Errorf("%w: got %d bytes, %d missing", store.ErrIncompleteBody, b.read, b.left)
	}
	return nil
}
