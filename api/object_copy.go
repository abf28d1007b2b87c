// CopyObject (PUT /bucket/key with x-amz-copy-source): the source, the
// metadata directive, x-amz-copy-source-if-* conditions, and the
// CopyObjectResult document.
package api

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/granary-dev/granary/api/s3err"
	"github.com/granary-dev/granary/store"
)

func (s objects) copyObject(c *fiber.Ctx, r *request) error {
	h := &c.Request().Header
	srcBucket, srcKey, err := parseCopySource(string(h.Peek("X-Amz-Copy-Source")))
	if err != nil {
		return err
	}
	if err := mayReadSource(r, srcBucket, srcKey); err != nil {
		return err
	}
	var meta *store.ObjectMeta
	switch d := string(h.Peek("X-Amz-Metadata-Directive")); {
	case d == "" || strings.EqualFold(d, "COPY"):
		if srcBucket == r.bucket && srcKey == r.key {
			return s3err.New(s3err.InvalidRequest, "This copy request is illegal because it is trying to copy an "+
				"object to itself without changing the object's metadata, storage class, website redirect "+
				"location or encryption attributes.")
		}
	case strings.EqualFold(d, "REPLACE"):
		m, err := requestMeta(h)
		if err != nil {
			return err
		}
		meta = &m
	default:
		return s3err.New(s3err.InvalidArgument, "Unknown metadata directive.")
	}
	if meta, err = s.copyTags(c, r, srcBucket, srcKey, meta); err != nil {
		return err
	}
	if cond, ok := parseConditions(h, copyConditions); ok {
		// The origin copies what it has now: check the conditions on that,
		// not on cached metadata.
		info, err := s.engine.HeadFresh(r.ctx, srcBucket, srcKey)
		if err != nil {
			return err
		}
		if err := cond.check(info); err != nil {
			if errors.Is(err, errNotModified) { // S3 answers 412 for a copy
				return s3err.New(s3err.PreconditionFailed, "")
			}
			return err
		}
	}
	info, err := s.engine.Copy(r.ctx, srcBucket, srcKey, r.bucket, r.key, meta)
	if err != nil {
		return err
	}
	return writeXML(c, http.StatusOK, copyObjectResult{
		LastModified: xmlTime(info.LastModified), ETag: `"` + info.ETag + `"`,
	})
}

// copyTags applies x-amz-tagging-directive to the copy's meta (nil: the
// source's metadata and tags). The directives are independent, as in S3:
// COPY keeps the source's tags, REPLACE takes x-amz-tagging's (none if
// absent), whichever metadata directive came with it.
func (s objects) copyTags(c *fiber.Ctx, r *request, srcBucket, srcKey string, meta *store.ObjectMeta) (*store.ObjectMeta, error) {
	h := &c.Request().Header
	switch d := string(h.Peek("X-Amz-Tagging-Directive")); {
	case d == "" || strings.EqualFold(d, "COPY"):
		if meta == nil {
			return nil, nil
		}
		tags, err := s.engine.ObjectTags(r.ctx, srcBucket, srcKey)
		if err != nil {
			return nil, err
		}
		meta.Tags = tags
		return meta, nil
	case strings.EqualFold(d, "REPLACE"):
		tags, err := parseTaggingHeader(string(h.Peek("X-Amz-Tagging")))
		if err != nil {
			return nil, err
		}
		if meta == nil {
			info, err := s.engine.HeadFresh(r.ctx, srcBucket, srcKey)
			if err != nil {
				return nil, err
			}
			m := info.ObjectMeta
			meta = &m
		}
		meta.Tags = tags
		if meta.Tags == nil {
			meta.Tags = map[string]string{}
		}
		return meta, nil
	}
	return nil, s3err.New(s3err.InvalidArgument, "Unknown tagging directive.")
}

// parseCopySource reads "[/]bucket/key[?versionId=...]", URL-encoded. The
// version is ignored: Granary serves the current version only.
func parseCopySource(v string) (bucket, key string, err error) {
	bad := s3err.New(s3err.InvalidArgument,
		"Copy Source must mention the source bucket and key: sourcebucket/sourcekey")
	if i := strings.IndexByte(v, '?'); i >= 0 {
		v = v[:i]
	}
	dec, uerr := url.PathUnescape(v)
	if uerr != nil {
		return "", "", bad
	}
	dec = strings.TrimPrefix(dec, "/")
	i := strings.IndexByte(dec, '/')
	if i <= 0 || i == len(dec)-1 {
		return "", "", bad
	}
	bucket, key = dec[:i], dec[i+1:]
	if err := checkBucket(bucket); err != nil {
		return "", "", err
	}
	if err := checkKey(key); err != nil {
		return "", "", err
	}
	return bucket, key, nil
}
