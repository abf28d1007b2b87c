// Keys of white space only (" ", "\t"), which S3 accepts and minio-go
// refuses before sending anything. For them the origin sends the request
// itself: minio-go presigns it (Presign checks no key) and the origin's
// own transport carries it. Stat, Get, Put, Delete and Copy take this
// path, and so do multipart uploads (blankmp.go); tagging needs none
// (minio-go checks no key there). (rawDo also carries the part HEADs of
// parts.go and the listings of list.go.)
package s3

import (
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/granary-dev/granary/store"
)

// blankPresignLife is how long a request's presigned URL is valid: it is
// sent at once.
const blankPresignLife = 15 * time.Minute

// isBlank reports whether key is white space only.
func isBlank(key string) bool { return key != "" && strings.TrimSpace(key) == "" }

// blankDo sends one request for bucket/key with the headers signed. A
// non-2xx answer is returned as minio-go's ErrorResponse, for wrap.
func (o *Origin) blankDo(ctx context.Context, method, bucket, key string, header http.Header, body io.Reader, size int64) (*http.Response, error) {
	return o.rawDo(ctx, method, bucket, key, url.Values{}, header, body, size)
}

// rawDo sends one request presigned by minio-go over the origin's
// transport, under ctx, for what minio-go will not send, not report or
// not bound by a context (blank keys, the Content-Range of a part,
// listings).
func (o *Origin) rawDo(ctx context.Context, method, bucket, key string, query url.Values, header http.Header, body io.Reader, size int64) (*http.Response, error) {
	u, err := o.core.PresignHeader(ctx, method, bucket, key, blankPresignLife, query, header)
	if err != nil {
		return nil, err
	}
	if body == nil {
		body = http.NoBody
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.ContentLength = max(size, 0)
	resp, err := o.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	er := minio.ErrorResponse{StatusCode: resp.StatusCode}
	if data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10)); len(data) > 0 {
		_ = xml.Unmarshal(data, &er) // a body that is no error document leaves Code empty
	}
	if er.Code == "" {
		er.Code = statusCode(resp.StatusCode)
	}
	return nil, er
}

// statusCode names the S3 error of a bodyless answer (HEAD).
func statusCode(status int) string {
	switch status {
	case http.StatusNotFound:
		return "NoSuchKey"
	case http.StatusForbidden:
		return "AccessDenied"
	case http.StatusPreconditionFailed:
		return "PreconditionFailed"
	}
	if status >= 500 {
		return "InternalError"
	}
	return "InvalidRequest"
}

func (o *Origin) blankStat(ctx context.Context, bucket, key string) (store.ObjectInfo, error) {
	resp, err := o.blankDo(ctx, http.MethodHead, bucket, key, nil, nil, 0)
	if err != nil {
		return store.ObjectInfo{}, wrap(ctx, "stat", bucket, key, err)
	}
	resp.Body.Close()
	return blankInfo(bucket, key, resp.Header)
}

// blankInfo is the info of a HEAD or GET answer's headers.
func blankInfo(bucket, key string, h http.Header) (store.ObjectInfo, error) {
	oi, err := minio.ToObjectInfo(bucket, key, h)
	if err != nil {
		return store.ObjectInfo{}, fmt.Errorf("s3: %s/%q: %w", bucket, key, err)
	}
	return toInfo(bucket, oi), nil
}

func (o *Origin) blankGet(ctx context.Context, bucket, key string, r store.ReadRange) (io.ReadCloser, store.ObjectInfo, error) {
	h := http.Header{}
	if r.ETag != "" {
		h.Set("If-Match", `"`+r.ETag+`"`)
	}
	switch {
	case r.Length > 0:
		h.Set("Range", "bytes="+strconv.FormatInt(r.Offset, 10)+"-"+strconv.FormatInt(r.Offset+r.Length-1, 10))
	case r.Offset > 0:
		h.Set("Range", "bytes="+strconv.FormatInt(r.Offset, 10)+"-")
	}
	resp, err := o.blankDo(ctx, http.MethodGet, bucket, key, h, nil, 0)
	if err != nil {
		return nil, store.ObjectInfo{}, wrap(ctx, "get", bucket, key, err)
	}
	info, err := blankInfo(bucket, key, resp.Header)
	if err != nil {
		resp.Body.Close()
		return nil, store.ObjectInfo{}, err
	}
	if total, ok := rangeTotal(resp.Header); ok {
		info.Size = total
	}
	if r.Length == 0 {
		resp.Body.Close()
		return io.NopCloser(strings.NewReader("")), info, nil
	}
	return &bodyReader{ctx: ctx, rc: resp.Body}, info, nil
}

func (o *Origin) blankPut(ctx context.Context, bucket, key string, body io.Reader, size int64, meta store.ObjectMeta) (store.ObjectInfo, error) {
	if size < 0 {
		return store.ObjectInfo{}, fmt.Errorf("%w: %q: a white-space key needs a known size", store.ErrInvalidKey, key)
	}
	br := &bodyCounter{r: body, left: size}
	resp, err := o.blankDo(ctx, http.MethodPut, bucket, key, putOptions(meta).Header(), br, size)
	if err != nil {
		if berr := br.failure(); berr != nil {
			return store.ObjectInfo{}, fmt.Errorf("s3: put %s/%q: %w", bucket, key, berr)
		}
		return store.ObjectInfo{}, wrap(ctx, "put", bucket, key, err)
	}
	resp.Body.Close()
	return store.ObjectInfo{
		Bucket: bucket, Key: key, Size: size, ETag: strings.Trim(resp.Header.Get("ETag"), `"`),
		LastModified: time.Now().UTC(), ObjectMeta: meta.Normalized(),
	}, nil
}

func (o *Origin) blankDelete(ctx context.Context, bucket, key string) error {
	resp, err := o.blankDo(ctx, http.MethodDelete, bucket, key, nil, nil, 0)
	if err != nil {
		return wrap(ctx, "delete", bucket, key, err)
	}
	resp.Body.Close()
	return nil
}

// blankCopy copies where the source or the destination key is blank: a
// PUT of the destination naming the source (escaped) in
// x-amz-copy-source.
func (o *Origin) blankCopy(ctx context.Context, srcBucket, srcKey, dstBucket, dstKey string, headers map[string]string) (store.ObjectInfo, error) {
	h := http.Header{}
	for k, v := range headers {
		h.Set(k, v)
	}
	h.Set("X-Amz-Copy-Source", "/"+srcBucket+"/"+url.PathEscape(srcKey))
	resp, err := o.blankDo(ctx, http.MethodPut, dstBucket, dstKey, h, nil, 0)
	if err != nil {
		return store.ObjectInfo{}, wrap(ctx, "copy", srcBucket, srcKey+" to "+dstBucket+"/"+dstKey, err)
	}
	resp.Body.Close()
	return o.Stat(ctx, dstBucket, dstKey)
}
