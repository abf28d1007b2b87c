// Pins through the signed admin API:
//
//	POST   /_granary/pin?bucket=B&prefix=P   pin a prefix (idempotent)
//	DELETE /_granary/pin?bucket=B&prefix=P   unpin it
//	GET    /_granary/pin                     every pin
//
// Each answers 200 with the JSON list of pins ([]store.Pin). Pinned data
// is never evicted; pinning does not fetch anything (warm the prefix). A
// pin of a bucket the origin does not have is NoSuchBucket.
package api

import (
	"errors"

	"github.com/gofiber/fiber/v2"

	"github.com/granary-dev/granary/access"
	"github.com/granary-dev/granary/api/s3err"
	"github.com/granary-dev/granary/store"
)

// pinRoute is the path of the pin calls.
const pinRoute = "/_granary/pin"

// pinOp routes a pin call by method.
func pinOp(method string) op {
	switch method {
	case mPOST:
		return opPin
	case mDELETE:
		return opUnpin
	case mGET:
		return opPins
	}
	return opUnknown
}

func (a *Admin) pin(c *fiber.Ctx, r *request) error {
	set, err := a.engine.Pins()
	if err != nil {
		return err
	}
	if r.op != opPins {
		args := c.Request().URI().QueryArgs()
		bucket, prefix := string(args.Peek("bucket")), string(args.Peek("prefix"))
		r.bucket = bucket
		if err := checkBucket(bucket); err != nil {
			return err
		}
		if r.op == opPin {
			// Pin only a bucket that exists (a typo would pin nothing,
			// silently); an unpin may name one that is gone.
			if err := a.engine.HeadBucket(r.ctx, bucket); err != nil {
				return err
			}
			err = set.Add(bucket, prefix)
		} else {
			err = set.Remove(bucket, prefix)
		}
		if err != nil {
			return pinError(err, bucket, prefix)
		}
	}
	list := []store.Pin{}
	for _, p := range set.List() {
		if r.policy.Prefix(access.Admin, p.Bucket, p.Prefix) {
			list = append(list, p)
		}
	}
	return c.JSON(list)
}

// pinError names the pin in the S3 error of a refused change.
func pinError(err error, bucket, prefix string) error {
	target := "s3://" + bucket + "/" + prefix
	switch {
	case errors.Is(err, store.ErrNoSuchPin):
		return s3err.New(s3err.NoSuchKey, "no pin on "+target)
	case errors.Is(err, store.ErrPinConfigured):
		return s3err.New(s3err.InvalidRequest, target+" is pinned in the configuration file; remove it there")
	}
	return err
}
