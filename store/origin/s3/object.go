// Reads, deletes and server-side copies of objects at an S3 origin.
package s3

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/minio/minio-go/v7"

	"github.com/granary-dev/granary/store"
)

// Stat returns the info of bucket/key (one HEAD).
func (o *Origin) Stat(ctx context.Context, bucket, key string) (store.ObjectInfo, error) {
	if err := checkNames(bucket, key); err != nil {
		return store.ObjectInfo{}, err
	}
	if isBlank(key) {
		return o.blankStat(ctx, bucket, key)
	}
	oi, err := o.core.StatObject(ctx, bucket, key, minio.StatObjectOptions{})
	if err != nil {
		return store.ObjectInfo{}, wrap(ctx, "stat", bucket, key, err)
	}
	return toInfo(bucket, oi), nil
}

// Get opens the bytes r selects with one GET (ranged, and conditional on
// r.ETag). Errors arrive here, not on the first Read: minio.Core.GetObject
// sends the request and reads the response headers at once.
func (o *Origin) Get(ctx context.Context, bucket, key string, r store.ReadRange) (io.ReadCloser, store.ObjectInfo, error) {
	if err := checkNames(bucket, key); err != nil {
		return nil, store.ObjectInfo{}, err
	}
	if r.Offset < 0 {
		return nil, store.ObjectInfo{}, fmt.Errorf("s3: negative read offset %d", r.Offset)
	}
	if isBlank(key) {
		return o.blankGet(ctx, bucket, key, r)
	}
	if r.Length == 0 {
		return o.getNothing(ctx, bucket, key, r.ETag)
	}
	var opts minio.GetObjectOptions
	if r.ETag != "" {
		opts.SetMatchETag(r.ETag)
	}
	switch {
	case r.Length > 0:
		opts.SetRange(r.Offset, r.Offset+r.Length-1)
	case r.Offset > 0:
		opts.SetRange(r.Offset, 0) // bytes=offset-
	}
	body, oi, hdr, err := o.core.GetObject(ctx, bucket, key, opts)
	if err != nil {
		return nil, store.ObjectInfo{}, wrap(ctx, "get", bucket, key, err)
	}
	info := toInfo(bucket, oi)
	total, ranged := rangeTotal(hdr)
	if ranged {
		info.Size = total // oi.Size is the length of the part sent
	} else if r.Offset > 0 || r.Length > 0 {
		// The server ignored the Range header and sent the whole object.
		if body, err = cutRange(body, r); err != nil {
			return nil, store.ObjectInfo{}, wrap(ctx, "get", bucket, key, err)
		}
	}
	return &bodyReader{ctx: ctx, rc: body}, info, nil
}

// cutRange turns a whole-object body into the range r asked for.
func cutRange(body io.ReadCloser, r store.ReadRange) (io.ReadCloser, error) {
	if _, err := io.CopyN(io.Discard, body, r.Offset); err != nil && err != io.EOF {
		body.Close()
		return nil, err
	}
	if r.Length < 0 {
		return body, nil
	}
	return struct {
		io.Reader
		io.Closer
	}{io.LimitReader(body, r.Length), body}, nil
}

// getNothing serves a zero-length read, which HTTP ranges cannot express:
// a conditional HEAD gives the info and the empty body.
func (o *Origin) getNothing(ctx context.Context, bucket, key, etag string) (io.ReadCloser, store.ObjectInfo, error) {
	var opts minio.StatObjectOptions
	if etag != "" {
		opts.SetMatchETag(etag)
	}
	oi, err := o.core.StatObject(ctx, bucket, key, opts)
	if err != nil {
		return nil, store.ObjectInfo{}, wrap(ctx, "get", bucket, key, err)
	}
	return io.NopCloser(strings.NewReader("")), toInfo(bucket, oi), nil
}

// rangeTotal parses the object size out of "Content-Range: bytes a-b/total".
func rangeTotal(h http.Header) (int64, bool) {
	cr := h.Get("Content-Range")
	i := strings.LastIndexByte(cr, '/')
	if i < 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(cr[i+1:], 10, 64)
	return n, err == nil
}

// bodyReader translates errors of a response body that breaks mid-read.
type bodyReader struct {
	ctx context.Context // the Get's
	rc  io.ReadCloser
}

func (b *bodyReader) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("s3: read body: %w", translate(b.ctx, err))
	}
	return n, err
}

func (b *bodyReader) Close() error { return b.rc.Close() }

// Delete removes bucket/key; S3 itself answers a missing key with success.
func (o *Origin) Delete(ctx context.Context, bucket, key string) error {
	if err := checkNames(bucket, key); err != nil {
		return err
	}
	if isBlank(key) {
		return o.blankDelete(ctx, bucket, key)
	}
	err := o.core.RemoveObject(ctx, bucket, key, minio.RemoveObjectOptions{})
	return wrap(ctx, "delete", bucket, key, err)
}

// Copy copies an object at the origin (one CopyObject, then a HEAD for
// the full info). A nil meta keeps the source's metadata and tags;
// otherwise meta replaces them entirely.
func (o *Origin) Copy(ctx context.Context, srcBucket, srcKey, dstBucket, dstKey string, meta *store.ObjectMeta) (store.ObjectInfo, error) {
	if err := checkNames(srcBucket, srcKey); err != nil {
		return store.ObjectInfo{}, err
	}
	if err := checkNames(dstBucket, dstKey); err != nil {
		return store.ObjectInfo{}, err
	}
	headers := map[string]string{}
	if meta != nil {
		headers["x-amz-metadata-directive"] = "REPLACE"
		headers["x-amz-tagging-directive"] = "REPLACE"
		for k, v := range putOptions(*meta).Header() {
			headers[k] = v[0]
		}
	}
	if isBlank(srcKey) || isBlank(dstKey) {
		return o.blankCopy(ctx, srcBucket, srcKey, dstBucket, dstKey, headers)
	}
	_, err := o.core.CopyObject(ctx, srcBucket, srcKey, dstBucket, dstKey, headers,
		minio.CopySrcOptions{}, minio.PutObjectOptions{})
	if err != nil {
		return store.ObjectInfo{}, wrap(ctx, "copy", srcBucket, srcKey+" to "+dstBucket+"/"+dstKey, err)
	}
	return o.Stat(ctx, dstBucket, dstKey)
}

// toInfo converts minio-go's info. User metadata comes back with
// canonical header case ("Dataset-Name"); S3 names are case-insensitive
// and the store's are lower-case.
func toInfo(bucket string, oi minio.ObjectInfo) store.ObjectInfo {
	info := store.ObjectInfo{
		Bucket: bucket, Key: oi.Key, Size: oi.Size,
		ETag: strings.Trim(oi.ETag, `"`), LastModified: oi.LastModified.UTC(),
		TagCount: oi.UserTagCount,
		ObjectMeta: store.ObjectMeta{
			ContentType:        oi.ContentType,
			ContentEncoding:    oi.Metadata.Get("Content-Encoding"),
			ContentDisposition: oi.Metadata.Get("Content-Disposition"),
			ContentLanguage:    oi.Metadata.Get("Content-Language"),
			CacheControl:       oi.Metadata.Get("Cache-Control"),
		},
	}
	if !oi.Expires.IsZero() {
		info.Expires = oi.Expires.UTC().Format(http.TimeFormat)
	}
	if len(oi.UserMetadata) > 0 {
		info.User = make(map[string]string, len(oi.UserMetadata))
		for k, v := range oi.UserMetadata {
			info.User[strings.ToLower(k)] = v
		}
	}
	return info
}
