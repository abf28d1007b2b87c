// CreateBucket (PUT /bucket), with its optional CreateBucketConfiguration.
package api

import (
	"encoding/xml"
	"errors"
	"net/http"

	"github.com/gofiber/fiber/v2"

	"github.com/granary-dev/granary/api/s3err"
)

func (s buckets) createBucket(c *fiber.Ctx, r *request) error {
	data, err := readXMLBody(r.auth.Body)
	if errors.Is(err, errBodyTooLarge) {
		return s3err.New(s3err.MalformedXML, "the XML body is too large")
	}
	if err != nil {
		return err
	}
	if len(data) > 0 {
		// Any LocationConstraint is accepted: a node serves one region, and
		// clients configured for another still expect their bucket.
		var conf createBucketConfiguration
		if err := xml.Unmarshal(data, &conf); err != nil {
			return s3err.New(s3err.MalformedXML, "")
		}
	}
	if err := s.engine.CreateBucket(r.ctx, r.bucket); err != nil {
		return err
	}
	c.Response().Header.Set("Location", "/"+r.bucket)
	c.Response().SetStatusCode(http.StatusOK)
	return nil
}
