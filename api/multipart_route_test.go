// Routing of the multipart operations: each combination of method,
// sub-resources and x-amz-copy-source selects the operation S3 would.
package api

import (
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

func TestMultipartRoutes(t *testing.T) {
	cases := []struct {
		method, query string
		copy          bool
		res           resource
		want          op
	}{
		{mPOST, "uploads", false, resObject, opCreateMultipartUpload},
		{mPOST, "uploads=", false, resObject, opCreateMultipartUpload},
		{mPUT, "partNumber=1&uploadId=u", false, resObject, opUploadPart},
		{mPUT, "uploadId=u&partNumber=1", false, resObject, opUploadPart},
		{mPUT, "partNumber=1&uploadId=u", true, resObject, opUploadPartCopy},
		{mPUT, "", true, resObject, opCopyObject},
		{mPUT, "", false, resObject, opPutObject},
		{mPOST, "uploadId=u", false, resObject, opCompleteMultipartUpload},
		{mPOST, "uploadId=u&uploads", false, resObject, opCompleteMultipartUpload},
		{mDELETE, "uploadId=u", false, resObject, opAbortMultipartUpload},
		{mDELETE, "", false, resObject, opDeleteObject},
		{mGET, "uploadId=u", false, resObject, opListParts},
		{mGET, "uploadId=u&max-parts=2&part-number-marker=1", false, resObject, opListParts},
		{mGET, "uploads", false, resBucket, opListMultipartUploads},
		{mGET, "uploads&prefix=a&max-uploads=3", false, resBucket, opListMultipartUploads},
		{mGET, "", false, resObject, opGetObject},
		{mGET, "partNumber=1", false, resObject, opGetObject},
		{mHEAD, "partNumber=2", false, resObject, opHeadObject},
		// Combinations S3 has no operation for.
		{mPUT, "partNumber=1", false, resObject, opNotImplemented},
		{mPUT, "uploads", false, resObject, opNotImplemented},
		{mGET, "uploads", false, resObject, opNotImplemented},
		{mPOST, "uploads", false, resBucket, opNotImplemented},
	}
	app := fiber.New()
	table := newRouteTable()
	for _, tc := range cases {
		var fctx fasthttp.RequestCtx
		fctx.Request.Header.SetMethod(tc.method)
		fctx.Request.SetRequestURI("/b/k?" + tc.query)
		if tc.copy {
			fctx.Request.Header.Set("X-Amz-Copy-Source", "/b/src")
		}
		c := app.AcquireCtx(&fctx)
		got := table.resolve(c, tc.res).op
		app.ReleaseCtx(c)
		if got != tc.want {
			t.Errorf("%s ?%s (copy %v, resource %d): %s, want %s", tc.method, tc.query, tc.copy, tc.res, got, tc.want)
		}
	}
}
