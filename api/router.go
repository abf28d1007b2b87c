// Dispatch: a request's resource (service, bucket, object), method and
// sub-resource query select one handler from a table filled once by small
// per-resource registration functions. fiber's own router is not used: it
// would decode and clean the path, and S3 keys must arrive byte-exact.
package api

import (
	"github.com/gofiber/fiber/v2"

	"github.com/granary-dev/granary/api/s3err"
)

// handlerFunc serves one routed, authenticated, validated request.
type handlerFunc func(s *S3, c *fiber.Ctx, r *request) error

// The handlers are methods of three views of the S3 face, by what they
// act on: the service and its buckets, objects, and multipart uploads.
type (
	buckets struct{ *S3 }
	objects struct{ *S3 }
	uploads struct{ *S3 }
)

// on is the handlerFunc of a view's method: on(objects.getObject).
func on[V ~struct{ *S3 }](h func(V, *fiber.Ctx, *request) error) handlerFunc {
	return func(s *S3, c *fiber.Ctx, r *request) error { return h(V{s}, c, r) }
}

// resource is what a request path addresses.
type resource uint8

const (
	resService resource = iota // "/"
	resBucket                  // "/bucket"
	resObject                  // "/bucket/key"
)

// HTTP methods as routing keys. Methods outside this set are never routed.
const (
	mGET    = "GET"
	mHEAD   = "HEAD"
	mPUT    = "PUT"
	mPOST   = "POST"
	mDELETE = "DELETE"
)

// methodName returns the constant for a request method, "" if it is not
// one S3 uses (so no string is built per request).
func methodName(m []byte) string {
	switch string(m) {
	case mGET:
		return mGET
	case mHEAD:
		return mHEAD
	case mPUT:
		return mPUT
	case mPOST:
		return mPOST
	case mDELETE:
		return mDELETE
	}
	return ""
}

// methodString is methodName, or a copy of m for the methods S3 does not
// use (which are still signed, and logged, as sent).
func methodString(m []byte) string {
	if name := methodName(m); name != "" {
		return name
	}
	return string(m)
}

// subCopy is the pseudo sub-resource of a PUT object carrying
// x-amz-copy-source (CopyObject rather than PutObject); subPartCopy is the
// same for a PUT of a part (UploadPartCopy rather than UploadPart).
// Neither is in subResourceNames, so no query parameter selects them.
const (
	subCopy     = "x-amz-copy-source"
	subPartCopy = "uploadId x-amz-copy-source"
)

// subResources are the query parameters that select an operation other
// than the plain one, by precedence (lower wins when several are present).
// Any other query parameter is an argument, not a selector.
var subResourceNames = []string{
	"uploadId", "uploads", "partNumber", "delete", "location", "versioning",
	"versions", "acl", "tagging", "policy", "policyStatus", "lifecycle", "cors",
	"website", "logging", "notification", "replication", "encryption",
	"object-lock", "retention", "legal-hold", "accelerate", "requestPayment",
	"analytics", "inventory", "metrics", "intelligent-tiering",
	"ownershipControls", "publicAccessBlock", "torrent", "restore", "select",
	"attributes", "renameObject", "session", "list-type",
}

// subResources maps each of subResourceNames to its rank.
var subResources = func() map[string]int {
	m := make(map[string]int, len(subResourceNames))
	for i, n := range subResourceNames {
		m[n] = i
	}
	return m
}()

type routeKey struct {
	res    resource
	method string
	sub    string
}

// route is a resolved operation.
type route struct {
	op op
	h  handlerFunc
}

// routeTable is filled by New and only read afterwards.
type routeTable struct {
	routes map[routeKey]route
}

func newRouteTable() *routeTable {
	t := &routeTable{routes: make(map[routeKey]route)}
	registerServiceRoutes(t)
	registerBucketRoutes(t)
	registerObjectRoutes(t)
	registerMultipartRoutes(t)
	registerTaggingRoutes(t)
	registerACLRoutes(t)
	return t
}

func (t *routeTable) add(res resource, method, sub string, o op, h handlerFunc) {
	t.routes[routeKey{res, method, sub}] = route{op: o, h: h}
}

func registerServiceRoutes(t *routeTable) {
	t.add(resService, mGET, "", opListBuckets, on(buckets.listBuckets))
}

func registerBucketRoutes(t *routeTable) {
	t.add(resBucket, mPUT, "", opCreateBucket, on(buckets.createBucket))
	t.add(resBucket, mHEAD, "", opHeadBucket, on(buckets.headBucket))
	t.add(resBucket, mDELETE, "", opDeleteBucket, on(buckets.deleteBucket))
	t.add(resBucket, mGET, "", opListObjects, on(buckets.listObjectsV1))
	t.add(resBucket, mGET, "list-type", opListObjectsV2, on(buckets.listObjectsV2))
	t.add(resBucket, mGET, "location", opGetBucketLocation, on(buckets.getBucketLocation))
	t.add(resBucket, mGET, "versioning", opGetBucketVersioning, on(buckets.getBucketVersioning))
	t.add(resBucket, mPUT, "versioning", opPutBucketVersioning, on(buckets.putBucketVersioning))
	t.add(resBucket, mGET, "versions", opListObjectVersions, on(buckets.listObjectVersions))
	t.add(resBucket, mPOST, "delete", opDeleteObjects, on(buckets.deleteObjects))
	// A POST to a bucket with no sub-resource is a browser-form upload.
	t.add(resBucket, mPOST, "", opNotImplemented, notImplemented)
}

func registerObjectRoutes(t *routeTable) {
	t.add(resObject, mGET, "", opGetObject, on(objects.getObject))
	t.add(resObject, mHEAD, "", opHeadObject, on(objects.headObject))
	t.add(resObject, mGET, "partNumber", opGetObject, on(objects.getObject))
	t.add(resObject, mHEAD, "partNumber", opHeadObject, on(objects.headObject))
	t.add(resObject, mPUT, "", opPutObject, on(objects.putObject))
	t.add(resObject, mPUT, subCopy, opCopyObject, on(objects.copyObject))
	t.add(resObject, mDELETE, "", opDeleteObject, on(objects.deleteObject))
}

// registerMultipartRoutes adds the multipart upload operations. uploadId
// outranks uploads and partNumber, so a part upload (partNumber and
// uploadId) is routed by uploadId.
func registerMultipartRoutes(t *routeTable) {
	t.add(resBucket, mGET, "uploads", opListMultipartUploads, on(uploads.listMultipartUploads))
	t.add(resObject, mPOST, "uploads", opCreateMultipartUpload, on(uploads.createMultipartUpload))
	t.add(resObject, mPUT, "uploadId", opUploadPart, on(uploads.uploadPart))
	t.add(resObject, mPUT, subPartCopy, opUploadPartCopy, on(uploads.uploadPartCopy))
	t.add(resObject, mPOST, "uploadId", opCompleteMultipartUpload, on(uploads.completeMultipartUpload))
	t.add(resObject, mDELETE, "uploadId", opAbortMultipartUpload, on(uploads.abortMultipartUpload))
	t.add(resObject, mGET, "uploadId", opListParts, on(uploads.listParts))
}

// registerTaggingRoutes adds the object and bucket tagging operations.
func registerTaggingRoutes(t *routeTable) {
	t.add(resObject, mGET, "tagging", opGetObjectTagging, on(objects.getObjectTagging))
	t.add(resObject, mPUT, "tagging", opPutObjectTagging, on(objects.putObjectTagging))
	t.add(resObject, mDELETE, "tagging", opDeleteObjectTagging, on(objects.deleteObjectTagging))
	t.add(resBucket, mGET, "tagging", opGetBucketTagging, on(buckets.getBucketTagging))
	t.add(resBucket, mPUT, "tagging", opPutBucketTagging, on(buckets.putBucketTagging))
	t.add(resBucket, mDELETE, "tagging", opDeleteBucketTagging, on(buckets.deleteBucketTagging))
}

// registerACLRoutes adds the bucket and object ACL operations (acl.go).
func registerACLRoutes(t *routeTable) {
	t.add(resBucket, mGET, "acl", opGetBucketACL, on(buckets.getBucketACL))
	t.add(resBucket, mPUT, "acl", opPutBucketACL, on(buckets.putBucketACL))
	t.add(resObject, mGET, "acl", opGetObjectACL, on(objects.getObjectACL))
	t.add(resObject, mPUT, "acl", opPutObjectACL, on(objects.putObjectACL))
}

// resolve picks the route of a request for res. A known sub-resource with
// no route is NotImplemented (501); a method the resource does not take is
// MethodNotAllowed.
func (t *routeTable) resolve(c *fiber.Ctx, res resource) route {
	req := c.Request()
	method := methodName(req.Header.Method())
	sub := subResourceOf(c)
	if res == resObject && method == mPUT && len(req.Header.Peek("X-Amz-Copy-Source")) > 0 {
		switch sub {
		case "":
			sub = subCopy
		case "uploadId":
			sub = subPartCopy
		}
	}
	if rt, ok := t.routes[routeKey{res, method, sub}]; ok {
		return rt
	}
	if sub != "" && method != "" {
		return route{op: opNotImplemented, h: notImplemented}
	}
	return route{op: opUnknown, h: methodNotAllowed}
}

// subResourceOf returns the selecting sub-resource of the query, if any.
func subResourceOf(c *fiber.Ctx) string {
	args := c.Request().URI().QueryArgs()
	if args.Len() == 0 {
		return ""
	}
	bestRank := len(subResourceNames)
	args.VisitAll(func(k, _ []byte) {
		if rank, ok := subResources[string(k)]; ok && rank < bestRank {
			bestRank = rank
		}
	})
	if bestRank == len(subResourceNames) {
		return ""
	}
	return subResourceNames[bestRank]
}

func notImplemented(_ *S3, _ *fiber.Ctx, _ *request) error {
	return s3err.New(s3err.NotImplemented, "")
}

func methodNotAllowed(_ *S3, _ *fiber.Ctx, _ *request) error {
	return s3err.New(s3err.MethodNotAllowed, "")
}
