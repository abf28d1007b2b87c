// DeleteObjects (POST /bucket?delete): up to 1,000 keys from an XML body,
// deleted a few at a time, with per-key results (only the failures in
// Quiet mode).
package api

import (
	"context"
	"errors"
	"net/http"
	"sync"

	"github.com/gofiber/fiber/v2"

	"github.com/granary-dev/granary/access"
	"github.com/granary-dev/granary/api/s3err"
	"github.com/granary-dev/granary/store"
)

const (
	// maxDeleteKeys is S3's limit on the keys of one DeleteObjects.
	maxDeleteKeys = 1000
	// deleteParallelism bounds the origin deletes one request runs at once.
	deleteParallelism = 16
)

func (s buckets) deleteObjects(c *fiber.Ctx, r *request) error {
	var req deleteRequest // Content-MD5 is checked by the sigv4 body
	if err := decodeXMLBody(r.auth.Body, &req); err != nil {
		return err
	}
	if n := len(req.Objects); n == 0 || n > maxDeleteKeys {
		return s3err.New(s3err.MalformedXML, "a Delete request holds 1 to 1000 objects")
	}
	if err := s.engine.HeadBucket(r.ctx, r.bucket); err != nil {
		return err
	}
	keys := make([]string, len(req.Objects))
	for i, o := range req.Objects {
		keys[i] = o.Key
	}
	errs := s.deleteKeys(r.ctx, r.bucket, keys, r.policy)
	var out deleteResult
	for i, key := range keys {
		if errs[i] == nil {
			if !req.Quiet {
				out.Deleted = append(out.Deleted, deletedXML{Key: key})
			}
			continue
		}
		e, known := toS3(errs[i])
		if !known {
			s.reqLog(r).Error().Err(errs[i]).Str("bucket", r.bucket).Str("key", key).Msg("delete failed")
		}
		if e == nil {
			e = s3err.New(s3err.InternalError, "")
		}
		out.Errors = append(out.Errors, deleteErrorXML{Key: key, Code: string(e.Code), Message: e.Description()})
	}
	return writeXML(c, http.StatusOK, out)
}

// deleteKeys deletes keys, deleteParallelism at a time, and returns each
// one's error (a missing key is deleted already; an invalid one, or one
// the caller may not delete, is never sent to the origin).
func (s buckets) deleteKeys(ctx context.Context, bucket string, keys []string, p *access.Policy) []error {
	errs := make([]error, len(keys))
	sem := make(chan struct{}, deleteParallelism)
	var wg sync.WaitGroup
	for i, key := range keys {
		if !p.Object(access.Delete, bucket, key) {
			errs[i] = errAccessDenied()
			continue
		}
		if err := checkKey(key); err != nil {
			errs[i] = err
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			err := s.engine.Delete(ctx, bucket, key)
			if err != nil && !errors.Is(err, store.ErrNoSuchKey) {
				errs[i] = err // each goroutine writes its own index only
			}
		}()
	}
	wg.Wait()
	return errs
}
