// Multipart uploads, the upload as a whole: CreateMultipartUpload
// (POST /bucket/key?uploads), CompleteMultipartUpload (POST
// /bucket/key?uploadId=ID) and AbortMultipartUpload (DELETE
// /bucket/key?uploadId=ID). The parts are in multipart_part.go, the
// listings in multipart_list.go.
package api

import (
	"net/http"

	"github.com/gofiber/fiber/v2"

	"github.com/granary-dev/granary/api/s3err"
	"github.com/granary-dev/granary/store"
)

// uploadIDOf returns the uploadId query argument. An empty one names no
// upload: NoSuchUpload, as S3 answers.
func uploadIDOf(c *fiber.Ctx) (string, error) {
	id := string(c.Request().URI().QueryArgs().Peek("uploadId"))
	if id == "" {
		return "", s3err.New(s3err.NoSuchUpload, "")
	}
	return id, nil
}

func (s uploads) createMultipartUpload(c *fiber.Ctx, r *request) error {
	meta, err := requestMeta(&c.Request().Header)
	if err != nil {
		return err
	}
	id, err := s.engine.CreateUpload(r.ctx, r.bucket, r.key, meta)
	if err != nil {
		return err
	}
	return writeXML(c, http.StatusOK, initiateMultipartUploadResult{Bucket: r.bucket, Key: r.key, UploadID: id})
}

func (s uploads) completeMultipartUpload(c *fiber.Ctx, r *request) error {
	uploadID, err := uploadIDOf(c)
	if err != nil {
		return err
	}
	var req completeMultipartUpload
	if err := decodeXMLBodyLimit(r.auth.Body, &req, maxCompleteBody); err != nil {
		return err
	}
	if len(req.Parts) == 0 {
		return s3err.New(s3err.MalformedXML, "the CompleteMultipartUpload document lists no parts")
	}
	parts := make([]store.CompletePart, len(req.Parts))
	for i, p := range req.Parts {
		parts[i] = store.CompletePart{Number: p.PartNumber, ETag: unquoteETag(p.ETag)}
	}
	info, err := s.engine.CompleteUpload(r.ctx, r.bucket, r.key, uploadID, parts)
	if err != nil {
		return err
	}
	return writeXML(c, http.StatusOK, completeMultipartUploadResult{
		Location: locationOf(c), Bucket: r.bucket, Key: r.key, ETag: `"` + info.ETag + `"`,
	})
}

// locationOf is the URL of the addressed object as the client reached it:
// its scheme, Host and path as sent (path or virtual-host style alike).
func locationOf(c *fiber.Ctx) string {
	scheme := "http://"
	if connState(c.Context().Conn()) != nil {
		scheme = "https://"
	}
	req := c.Request()
	return scheme + string(req.Header.Host()) + string(req.URI().PathOriginal())
}

func (s uploads) abortMultipartUpload(c *fiber.Ctx, r *request) error {
	uploadID, err := uploadIDOf(c)
	if err != nil {
		return err
	}
	if err := s.engine.AbortUpload(r.ctx, r.bucket, r.key, uploadID); err != nil {
		return err
	}
	c.Response().SetStatusCode(http.StatusNoContent)
	return nil
}
