// Multipart uploads, one part: UploadPart (PUT
// /bucket/key?partNumber=N&uploadId=ID), whose body is streamed to the
// engine through the same checks as a PutObject body, and UploadPartCopy
// (the same with x-amz-copy-source), whose bytes are read from the source
// through the engine (so a cached source costs the origin nothing) and
// streamed into the part.
package api

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/granary-dev/granary/api/s3err"
	"github.com/granary-dev/granary/gateway"
	"github.com/granary-dev/granary/store"
)

// partTarget returns the part number and upload ID a part request names.
func partTarget(c *fiber.Ctx) (int, string, error) {
	v := c.Request().URI().QueryArgs().Peek("partNumber")
	n, err := strconv.Atoi(string(v))
	if err != nil || n < 1 || n > store.MaxPartNumber {
		return 0, "", s3err.New(s3err.InvalidArgument,
			"Part number must be an integer between 1 and 10000, inclusive")
	}
	id, err := uploadIDOf(c)
	if err != nil {
		return 0, "", err
	}
	return n, id, nil
}

func (s uploads) uploadPart(c *fiber.Ctx, r *request) error {
	number, uploadID, err := partTarget(c)
	if err != nil {
		return err
	}
	// The body goes to the engine as it arrives; it is never held whole.
	body, err := exactBody(r, store.MaxPartSize)
	if err != nil {
		return err
	}
	part, err := s.engine.UploadPart(r.ctx, r.bucket, r.key, uploadID, number, body, r.auth.ContentLength)
	if err != nil {
		return bodyFailure(r, body, err)
	}
	setETag(c, part.ETag)
	c.Response().SetStatusCode(http.StatusOK)
	return nil
}

// errCopyRange is a malformed x-amz-copy-source-range.
var errCopyRange = s3err.New(s3err.InvalidArgument, "The x-amz-copy-source-range value must be of the form "+
	"bytes=first-last where first and last are the zero-based offsets of the first and last bytes to copy")

// parseCopyRange reads x-amz-copy-source-range: absent, or exactly
// "bytes=first-last" with first <= last.
func parseCopyRange(v []byte) (rng gateway.Range, ok bool, err error) {
	if len(v) == 0 {
		return gateway.Range{}, false, nil
	}
	rng, kind := parseRange(v)
	if kind != rangeValid || rng.Suffix > 0 || rng.End < 0 {
		return gateway.Range{}, false, errCopyRange
	}
	return rng, true, nil
}

func (s uploads) uploadPartCopy(c *fiber.Ctx, r *request) error {
	number, uploadID, err := partTarget(c)
	if err != nil {
		return err
	}
	h := &c.Request().Header
	srcBucket, srcKey, err := parseCopySource(string(h.Peek("X-Amz-Copy-Source")))
	if err != nil {
		return err
	}
	if err := mayReadSource(r, srcBucket, srcKey); err != nil {
		return err
	}
	rng, hasRange, err := parseCopyRange(h.Peek("X-Amz-Copy-Source-Range"))
	if err != nil {
		return err
	}
	if s.engine.WriteMode(r.bucket) == gateway.ReadOnly {
		return gateway.ErrReadOnly // before the source is read for nothing
	}
	cond, hasCond := parseConditions(h, copyConditions)
	opts := gateway.GetOptions{Check: func(info store.ObjectInfo) error {
		return checkPartSource(info, cond, hasCond, rng, hasRange)
	}}
	if hasRange {
		opts.Range = &rng
	}
	ctx, cancel := context.WithCancel(r.ctx)
	defer cancel()
	// S3 copies the source as it is now: refresh the cached info from the
	// origin first (as CopyObject checks its conditions on the origin's
	// info), then read the bytes through the cache. The conditions are
	// checked on the info whose bytes are read.
	if _, err := s.engine.HeadFresh(ctx, srcBucket, srcKey); err != nil {
		return err
	}
	obj, err := s.engine.Get(ctx, srcBucket, srcKey, opts)
	if err != nil {
		return err
	}
	defer obj.Close()
	src := &copySource{r: obj, left: obj.Length}
	part, err := s.engine.UploadPart(ctx, r.bucket, r.key, uploadID, number, src, obj.Length)
	if err != nil {
		if src.err != nil {
			return src.err
		}
		return err
	}
	modified := part.LastModified
	if modified.IsZero() {
		modified = time.Now()
	}
	return writeXML(c, http.StatusOK, copyPartResult{LastModified: xmlTime(modified), ETag: `"` + part.ETag + `"`})
}

// checkPartSource applies a part copy's conditions and range to the
// source's info: a failed condition is PreconditionFailed (S3 answers 412
// where a GET would be 304), a range past the source's end InvalidRange,
// and a copy larger than a part InvalidRequest.
func checkPartSource(info store.ObjectInfo, cond conditions, hasCond bool, rng gateway.Range, hasRange bool) error {
	if hasCond {
		if err := cond.check(info); err != nil {
			if errors.Is(err, errNotModified) {
				return s3err.New(s3err.PreconditionFailed, "")
			}
			return err
		}
	}
	n := info.Size
	if hasRange {
		if rng.End >= info.Size {
			return s3err.New(s3err.InvalidRange, "The requested range is not satisfiable: the copy source holds "+
				strconv.FormatInt(info.Size, 10)+" bytes")
		}
		n = rng.End - rng.Start + 1
	}
	if n > store.MaxPartSize {
		return s3err.New(s3err.InvalidRequest,
			"The specified copy source is larger than the maximum allowable size for a copy source: 5368709120")
	}
	return nil
}

// copySource yields exactly left bytes of a part copy's source. It keeps
// the source's own failure (or its early end, ServiceUnavailable), so the
// handler answers with that rather than with what the destination made of
// it.
type copySource struct {
	r    io.Reader
	left int64
	err  error
}

func (cs *copySource) Read(p []byte) (int, error) {
	if cs.err != nil {
		return 0, cs.err
	}
	if cs.left == 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > cs.left {
		p = p[:cs.left]
	}
	n, err := cs.r.Read(p)
	cs.left -= int64(n)
	switch {
	case cs.left == 0:
		return n, nil
	case errors.Is(err, io.EOF):
		cs.err = s3err.New(s3err.ServiceUnavailable, "the copy source ended early")
	case err != nil:
		cs.err = err
	}
	return n, cs.err
}
