// Multipart uploads, the listings: ListParts (GET /bucket/key?uploadId=ID,
// paged by part-number-marker and max-parts) and ListMultipartUploads
// (GET /bucket?uploads, paged by key-marker and upload-id-marker, grouped
// by prefix and delimiter, with encoding-type=url as in ListObjects).
package api

import (
	"net/http"
	"strconv"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/granary-dev/granary/api/s3err"
	"github.com/granary-dev/granary/store"
)

// maxListParts is the most entries a page of either listing holds.
const maxListParts = 1000

// queryCount parses the non-negative integer argument name, def when it
// is absent.
func queryCount(args *fasthttp.Args, name string, def int) (int, error) {
	v := args.Peek(name)
	if len(v) == 0 {
		return def, nil
	}
	n, err := strconv.Atoi(string(v))
	if err != nil || n < 0 {
		return 0, s3err.New(s3err.InvalidArgument, "Argument "+name+" must be an integer between 0 and 2147483647")
	}
	return n, nil
}

func (s uploads) listParts(c *fiber.Ctx, r *request) error {
	uploadID, err := uploadIDOf(c)
	if err != nil {
		return err
	}
	args := c.Request().URI().QueryArgs()
	marker, err := queryCount(args, "part-number-marker", 0)
	if err != nil {
		return err
	}
	maxParts, err := queryCount(args, "max-parts", maxListParts)
	if err != nil {
		return err
	}
	maxParts = min(maxParts, maxListParts)
	// max-parts=0 lists nothing, but the upload must still exist.
	page, err := s.engine.ListParts(r.ctx, r.bucket, r.key, uploadID,
		store.PartListOptions{After: marker, MaxParts: max(maxParts, 1)})
	if err != nil {
		return err
	}
	if maxParts == 0 {
		page = store.PartPage{IsTruncated: len(page.Parts) > 0, NextAfter: marker}
	}
	owner := ownerOf(r)
	out := listPartsResult{
		Bucket: r.bucket, Key: r.key, UploadID: uploadID, Initiator: owner, Owner: owner,
		StorageClass: "STANDARD", PartNumberMarker: marker, NextPartNumberMarker: page.NextAfter,
		MaxParts: maxParts, IsTruncated: page.IsTruncated, Parts: make([]partXML, len(page.Parts)),
	}
	for i, p := range page.Parts {
		out.Parts[i] = partXML{PartNumber: p.Number, LastModified: xmlTime(p.LastModified),
			ETag: `"` + p.ETag + `"`, Size: p.Size}
	}
	// As S3 does, a last page names its last part too.
	if !page.IsTruncated && len(page.Parts) > 0 {
		out.NextPartNumberMarker = page.Parts[len(page.Parts)-1].Number
	}
	return writeXML(c, http.StatusOK, out)
}

// uploadsQuery is the parsed query of ListMultipartUploads.
type uploadsQuery struct {
	listQuery
	keyMarker, uploadIDMarker string
}

func parseUploadsQuery(args *fasthttp.Args) (uploadsQuery, error) {
	q := uploadsQuery{
		listQuery: listQuery{prefix: queryValue(args, "prefix"), delimiter: queryValue(args, "delimiter")},
		keyMarker: queryValue(args, "key-marker"), uploadIDMarker: queryValue(args, "upload-id-marker"),
	}
	for _, v := range [...]string{q.prefix, q.delimiter, q.keyMarker, q.uploadIDMarker} {
		if err := checkListArg(v); err != nil {
			return q, err
		}
	}
	// S3 ignores upload-id-marker without key-marker.
	if q.keyMarker == "" {
		q.uploadIDMarker = ""
	}
	n, err := queryCount(args, "max-uploads", maxListParts)
	if err != nil {
		return q, err
	}
	q.maxKeys = min(n, maxListParts)
	q.urlEncode, err = parseEncodingType(args)
	return q, err
}

func (s uploads) listMultipartUploads(c *fiber.Ctx, r *request) error {
	q, err := parseUploadsQuery(c.Request().URI().QueryArgs())
	if err != nil {
		return err
	}
	// max-uploads=0 lists nothing, but the bucket must still exist.
	page, err := s.engine.ListUploads(r.ctx, r.bucket, store.UploadListOptions{
		Prefix: q.prefix, Delimiter: q.delimiter, KeyAfter: q.keyMarker,
		UploadIDAfter: q.uploadIDMarker, MaxUploads: max(q.maxKeys, 1),
	})
	if err != nil {
		return err
	}
	if q.maxKeys == 0 {
		page = store.UploadPage{IsTruncated: len(page.Uploads)+len(page.CommonPrefixes) > 0,
			NextKeyAfter: q.keyMarker, NextUploadIDAfter: q.uploadIDMarker}
	}
	owner := ownerOf(r)
	out := listMultipartUploadsResult{
		Bucket: r.bucket, KeyMarker: q.enc(q.keyMarker), UploadIDMarker: q.uploadIDMarker,
		Delimiter: q.enc(q.delimiter), Prefix: q.enc(q.prefix), MaxUploads: q.maxKeys,
		IsTruncated: page.IsTruncated, Uploads: make([]uploadXML, len(page.Uploads)),
		CommonPrefixes: q.prefixes(page.CommonPrefixes),
	}
	if page.IsTruncated {
		out.NextKeyMarker, out.NextUploadIDMarker = q.enc(page.NextKeyAfter), page.NextUploadIDAfter
	}
	for i, u := range page.Uploads {
		out.Uploads[i] = uploadXML{Key: q.enc(u.Key), UploadID: u.UploadID, Initiator: owner, Owner: owner,
			StorageClass: "STANDARD", Initiated: xmlTime(u.Initiated)}
	}
	if q.urlEncode {
		out.EncodingType = "url"
	}
	return writeXML(c, http.StatusOK, out)
}
