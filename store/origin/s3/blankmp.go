// Multipart uploads of keys of white space only, sent by the origin itself
// (minio-go refuses the key; see blank.go): each call is the one request
// minio-go would have sent, presigned, with its XML answer read here.
package s3

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/minio/minio-go/v7"

	"github.com/granary-dev/granary/store"
)

// maxBlankAnswer bounds an XML answer readAnswer reads (a page of 1,000
// parts is well under it, and so is one of 1,000 listed keys of 1,024
// bytes, each byte percent-encoded).
const maxBlankAnswer = 8 << 20

// readAnswer decodes resp's XML body into v. A 200 answer may still be an
// error document (S3 sends one when a completion fails after its headers
// went out): it is returned as the error it names.
func readAnswer(resp *http.Response, v any) error {
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBlankAnswer))
	if err != nil {
		return err
	}
	var er minio.ErrorResponse
	if xml.Unmarshal(data, &er) == nil && er.Code != "" {
		er.StatusCode = resp.StatusCode
		return er
	}
	return xml.Unmarshal(data, v)
}

// uploadQuery is the query naming an upload, with extra pairs.
func uploadQuery(uploadID string, kv ...string) url.Values {
	q := url.Values{"uploadId": {uploadID}}
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	return q
}

func (o *Origin) blankNewUpload(ctx context.Context, bucket, key string, meta store.ObjectMeta) (string, error) {
	resp, err := o.rawDo(ctx, http.MethodPost, bucket, key, url.Values{"uploads": {""}}, putOptions(meta).Header(), nil, 0)
	if err != nil {
		return "", err
	}
	var res struct {
		UploadID string `xml:"UploadId"`
	}
	if err := readAnswer(resp, &res); err != nil {
		return "", err
	}
	if res.UploadID == "" {
		return "", fmt.Errorf("the origin started an upload without an upload ID")
	}
	return res.UploadID, nil
}

// blankPutPart sends part number; it returns the part's ETag, unquoted.
func (o *Origin) blankPutPart(ctx context.Context, bucket, key, uploadID string, number int, body io.Reader, size int64) (string, error) {
	q := uploadQuery(uploadID, "partNumber", strconv.Itoa(number))
	resp, err := o.rawDo(ctx, http.MethodPut, bucket, key, q, nil, body, size)
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	return strings.Trim(resp.Header.Get("ETag"), `"`), nil
}

// blankComplete joins the parts; it returns the object's ETag, unquoted.
func (o *Origin) blankComplete(ctx context.Context, bucket, key, uploadID string, parts []minio.CompletePart) (string, error) {
	doc, err := xml.Marshal(struct {
		XMLName xml.Name             `xml:"CompleteMultipartUpload"`
		Parts   []minio.CompletePart `xml:"Part"`
	}{Parts: parts})
	if err != nil {
		return "", err
	}
	h := http.Header{"Content-Type": {"application/xml"}}
	resp, err := o.rawDo(ctx, http.MethodPost, bucket, key, uploadQuery(uploadID), h, bytes.NewReader(doc), int64(len(doc)))
	if err != nil {
		return "", err
	}
	var res struct{ ETag string }
	if err := readAnswer(resp, &res); err != nil {
		return "", err
	}
	return strings.Trim(res.ETag, `"`), nil
}

func (o *Origin) blankAbort(ctx context.Context, bucket, key, uploadID string) error {
	resp, err := o.rawDo(ctx, http.MethodDelete, bucket, key, uploadQuery(uploadID), nil, nil, 0)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

func (o *Origin) blankListParts(ctx context.Context, bucket, key, uploadID string, after, maxParts int) (minio.ListObjectPartsResult, error) {
	q := uploadQuery(uploadID, "max-parts", strconv.Itoa(maxParts))
	if after > 0 {
		q.Set("part-number-marker", strconv.Itoa(after))
	}
	var res minio.ListObjectPartsResult
	resp, err := o.rawDo(ctx, http.MethodGet, bucket, key, q, nil, nil, 0)
	if err == nil {
		err = readAnswer(resp, &res)
	}
	return res, err
}

// blankStatMatch is the info of bucket/key if its ETag is etag.
func (o *Origin) blankStatMatch(ctx context.Context, bucket, key, etag string) (store.ObjectInfo, error) {
	resp, err := o.blankDo(ctx, http.MethodHead, bucket, key, http.Header{"If-Match": {`"` + etag + `"`}}, nil, 0)
	if err != nil {
		return store.ObjectInfo{}, err
	}
	resp.Body.Close()
	return blankInfo(bucket, key, resp.Header)
}
