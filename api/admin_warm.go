// Warm-up jobs and the node's status through the signed admin API:
//
//	POST   /_granary/warm?bucket=B&prefix=P[&metadata-only=true][&parallel=N]
//	GET    /_granary/warm            every job's status
//	GET    /_granary/warm?id=ID      one job's status
//	DELETE /_granary/warm?id=ID      cancel a job
//	DELETE /_granary/warm?id=ID&member=M   cancel member M's job (admin_warm_member.go)
//	GET    /_granary/status[?bucket=B[&prefix=P]]
//
// Each answers 200 with JSON: a ops.WarmStatus, or a list of them.
// A POST answers at once with the new job's status; clients poll it.
package api

import (
	"errors"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/granary-dev/granary/access"
	"github.com/granary-dev/granary/api/s3err"
	"github.com/granary-dev/granary/ops"
	"github.com/granary-dev/granary/store"
)

// warmRoute is the path of the warm-up calls.
const warmRoute = "/_granary/warm"

// maxWarmParallel bounds the objects a warm-up fetches at once.
const maxWarmParallel = 256

// warmOp routes a warm-up call by method.
func warmOp(method string) op {
	switch method {
	case mPOST:
		return opWarmStart
	case mGET:
		return opWarmStatus
	case mDELETE:
		return opWarmCancel
	}
	return opUnknown
}

// warm answers an authenticated warm-up call.
func (a *Admin) warm(c *fiber.Ctx, r *request) error {
	args := c.Request().URI().QueryArgs()
	id := string(args.Peek("id"))
	switch r.op {
	case opWarmStart:
		spec, err := warmSpec(c)
		if err != nil {
			return err
		}
		r.bucket = spec.Bucket
		if id, err = a.ops.StartWarm(r.ctx, spec); err != nil {
			return err
		}
	case opWarmCancel:
		m, other, err := a.warmMember(c)
		if err != nil {
			return err
		}
		if other {
			return a.cancelMemberWarm(c, r, m, id)
		}
		if err := a.mayAdminWarm(r, id); err != nil {
			return err
		}
		if !a.ops.CancelWarm(id) {
			return noSuchWarm(id)
		}
	case opWarmStatus:
		if id == "" {
			return c.JSON(a.visibleWarms(r))
		}
		if err := a.mayAdminWarm(r, id); err != nil {
			return err
		}
	}
	st, ok := a.ops.WarmStatus(id)
	if !ok {
		return noSuchWarm(id)
	}
	return c.JSON(st)
}

// warmSpec reads a warm-up's parameters from the query.
func warmSpec(c *fiber.Ctx) (ops.WarmSpec, error) {
	args := c.Request().URI().QueryArgs()
	spec := ops.WarmSpec{Bucket: string(args.Peek("bucket")), Prefix: string(args.Peek("prefix"))}
	if err := checkBucket(spec.Bucket); err != nil {
		return spec, err
	}
	if v := args.Peek("metadata-only"); len(v) > 0 {
		b, err := strconv.ParseBool(string(v))
		if err != nil {
			return spec, s3err.New(s3err.InvalidArgument, "metadata-only: want true or false")
		}
		spec.MetadataOnly = b
	}
	if v := args.Peek("parallel"); len(v) > 0 {
		n, err := strconv.Atoi(string(v))
		if err != nil || n < 1 || n > maxWarmParallel {
			return spec, s3err.New(s3err.InvalidArgument, "parallel: want a number from 1 to "+strconv.Itoa(maxWarmParallel))
		}
		spec.Parallel = n
	}
	return spec, nil
}

// statusRoute reports the node: GET /_granary/status[?bucket=B[&prefix=P]]
// answers an ops.Status as JSON.
const statusRoute = "/_granary/status"

// nodeStatus answers this node's status: GET ?bucket=B[&prefix=P][&key=K].
func (a *Admin) nodeStatus(c *fiber.Ctx, r *request) error {
	args := c.Request().URI().QueryArgs()
	bucket, prefix := string(args.Peek("bucket")), string(args.Peek("prefix"))
	if bucket != "" {
		r.bucket = bucket
		if err := checkBucket(bucket); err != nil {
			return err
		}
		// A missing bucket is an error; an unreachable origin is not:
		// status reports what the node holds without it.
		if err := a.engine.HeadBucket(r.ctx, bucket); err != nil && !errors.Is(err, store.ErrUnavailable) {
			return err
		}
	}
	st, err := a.ops.Status(r.ctx, bucket, prefix)
	if err != nil {
		return err
	}
	st.Warm = a.visibleWarms(r)
	st.Access = a.access.Digest()
	if key := string(args.Peek("key")); bucket != "" && key != "" {
		oh, err := a.ops.HeldObject(r.ctx, bucket, key)
		if err != nil {
			return err
		}
		st.Object = &oh
	}
	return c.JSON(st)
}

func noSuchWarm(id string) error {
	return s3err.New(s3err.NoSuchKey, "no warm-up job "+strconv.Quote(id))
}

// mayAdminWarm refuses a call on job id unless the caller may administer
// its bucket and prefix. A job that does not exist is left to the call.
func (a *Admin) mayAdminWarm(r *request, id string) error {
	st, ok := a.ops.WarmStatus(id)
	if ok && !r.policy.Prefix(access.Admin, st.Spec.Bucket, st.Spec.Prefix) {
		return errAccessDenied()
	}
	return nil
}

// visibleWarms returns the warm-up jobs the caller may administer.
func (a *Admin) visibleWarms(r *request) []ops.WarmStatus {
	return administered(a.ops.WarmJobs(), r.policy)
}

// administered is the jobs of buckets and prefixes policy lets its
// holder administer (jobs is reused).
func administered(jobs []ops.WarmStatus, policy *access.Policy) []ops.WarmStatus {
	out := jobs[:0]
	for _, j := range jobs {
		if policy.Prefix(access.Admin, j.Spec.Bucket, j.Spec.Prefix) {
			out = append(out, j)
		}
	}
	return out
}
