// GET and HEAD with partNumber: the part's bytes as a ranged read (206,
// Content-Range), with x-amz-mp-parts-count for an object made from parts.
// Part 1 of an object written whole is all of it; a part past the last is
// 400 InvalidPart.
package api

import (
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/granary-dev/granary/api/s3err"
	"github.com/granary-dev/granary/gateway"
	"github.com/granary-dev/granary/store"
)

// objectPart is the part a request asks for.
type objectPart struct {
	rng gateway.Range
}

// partOf returns the part r asks for with partNumber, nil without one
// (or for an empty object, whose part 1 is the plain answer). It sets
// x-amz-mp-parts-count. kind is the Range header's: S3 takes one or the
// other.
func (s objects) partOf(c *fiber.Ctx, r *request, kind rangeKind) (*objectPart, error) {
	args := c.Request().URI().QueryArgs()
	if !args.Has("partNumber") {
		return nil, nil
	}
	n, err := strconv.Atoi(string(args.Peek("partNumber")))
	if err != nil || n < 1 || n > store.MaxPartNumber {
		return nil, s3err.New(s3err.InvalidArgument, "Part number must be an integer between 1 and 10000, inclusive")
	}
	if kind != rangeNone {
		return nil, s3err.New(s3err.InvalidRequest, "Cannot specify both Range header and partNumber query parameter")
	}
	info, off, length, parts, err := s.engine.PartRange(r.ctx, r.bucket, r.key, n)
	if err != nil {
		return nil, err
	}
	if hasPartsSuffix(info.ETag) {
		c.Response().Header.Set("X-Amz-Mp-Parts-Count", strconv.Itoa(parts))
	}
	if length == 0 { // an empty object: its one part is all of nothing
		return nil, nil
	}
	return &objectPart{rng: gateway.Range{Start: off, End: off + length - 1}}, nil
}

// hasPartsSuffix reports whether an ETag is a multipart one ("...-N").
func hasPartsSuffix(etag string) bool {
	for i := len(etag) - 1; i >= 0; i-- {
		if etag[i] == '-' {
			return i < len(etag)-1
		}
		if etag[i] < '0' || etag[i] > '9' {
			return false
		}
	}
	return false
}
