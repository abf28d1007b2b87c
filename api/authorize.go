// Authorization: what each S3 operation needs of the caller's policy
// (access.Policy), checked once the request is routed and its signature
// verified. The handlers of CopyObject, UploadPartCopy and DeleteObjects
// check what only they know (the copy's source, each key to delete);
// ListBuckets shows only the buckets the policy sees.
package api

import (
	"github.com/gofiber/fiber/v2"

	"github.com/granary-dev/granary/access"
	"github.com/granary-dev/granary/api/s3err"
)

// errAccessDenied is S3's answer to a caller its policy does not allow.
func errAccessDenied() error { return s3err.New(s3err.AccessDenied, "") }

// allows reports whether p allows operation o on the request's target.
// Operations the router does not serve (NotImplemented, MethodNotAllowed)
// need only sight of the bucket, so their answer tells nothing more.
func allows(p *access.Policy, c *fiber.Ctx, o op, bucket, key string) bool {
	switch o {
	case opListBuckets:
		return !p.Empty()
	case opCreateBucket:
		return p.Bucket(access.Write, bucket)
	case opDeleteBucket:
		return p.Bucket(access.Delete, bucket)
	case opGetBucketTagging, opGetBucketACL:
		return p.Bucket(access.Read, bucket)
	case opPutBucketTagging, opDeleteBucketTagging, opPutBucketACL:
		return p.Bucket(access.Write, bucket)
	case opListObjects, opListObjectsV2, opListObjectVersions, opListMultipartUploads:
		return p.Prefix(access.List, bucket, queryValue(c.Request().URI().QueryArgs(), "prefix"))
	case opGetObject, opHeadObject, opGetObjectTagging, opGetObjectACL:
		return p.Object(access.Read, bucket, key)
	case opPutObject, opCopyObject, opCreateMultipartUpload, opUploadPart, opUploadPartCopy,
		opCompleteMultipartUpload, opAbortMultipartUpload, opListParts, opPutObjectTagging, opDeleteObjectTagging,
		opPutObjectACL:
		return p.Object(access.Write, bucket, key)
	case opDeleteObject:
		return p.Object(access.Delete, bucket, key)
	}
	// HeadBucket, GetBucketLocation, Get/PutBucketVersioning, DeleteObjects
	// (whose keys are checked one by one), and the unserved operations.
	return bucket == "" || p.Sees(bucket)
}

// authorize refuses r unless its policy allows its operation.
func (s *S3) authorize(c *fiber.Ctx, r *request) error {
	if !allows(r.policy, c, r.op, r.bucket, r.key) {
		return errAccessDenied()
	}
	return nil
}

// mayAnonymously reports whether a request may go without a signature:
// it carries none, no body, and the anonymous policy allows it. A signed
// request is always verified, so bad credentials still fail.
func (s *S3) mayAnonymously(c *fiber.Ctx, o op, bucket, key string) bool {
	anon := s.access.Anonymous()
	return !anon.Empty() && !isSigned(c) && c.Request().Header.ContentLength() <= 0 &&
		(o == opGetObject || o == opHeadObject || o == opListObjects || o == opListObjectsV2) &&
		allows(anon, c, o, bucket, key)
}

// mayReadSource refuses a copy whose source the caller may not read.
func mayReadSource(r *request, bucket, key string) error {
	if !r.policy.Object(access.Read, bucket, key) {
		return errAccessDenied()
	}
	return nil
}

// authorizeAdmin checks an admin call on the bucket and prefix (or key) of its
// query; one with no bucket acts on the whole node. The calls that name a
// warm-up job or list jobs or pins are checked by their handlers, job by
// job and pin by pin.
func (a *Admin) authorizeAdmin(c *fiber.Ctx, r *request) error {
	switch r.op {
	case opWarmStatus, opWarmCancel, opPins, opRing:
		return nil
	}
	args := c.Request().URI().QueryArgs()
	bucket, prefix, key := string(args.Peek("bucket")), string(args.Peek("prefix")), string(args.Peek("key"))
	ok := r.policy.Node(access.Admin)
	if bucket != "" {
		ok = r.policy.Prefix(access.Admin, bucket, prefix) && (key == "" || r.policy.Object(access.Admin, bucket, key))
	}
	if !ok {
		return errAccessDenied()
	}
	return nil
}
