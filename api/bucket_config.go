// Bucket configuration reads Granary can answer cheaply: GetBucketLocation
// (the node's region) and GetBucketVersioning (never enabled).
package api

import (
	"net/http"

	"github.com/gofiber/fiber/v2"
)

func (s buckets) getBucketLocation(c *fiber.Ctx, r *request) error {
	if err := s.engine.HeadBucket(r.ctx, r.bucket); err != nil {
		return err
	}
	loc := s.opts.Region
	if loc == DefaultRegion {
		loc = "" // S3 reports us-east-1 as an empty constraint
	}
	return writeXML(c, http.StatusOK, locationConstraintXML{Location: loc})
}

// getBucketVersioning answers an empty configuration: versioning has never
// been enabled on a Granary bucket.
func (s buckets) getBucketVersioning(c *fiber.Ctx, r *request) error {
	if err := s.engine.HeadBucket(r.ctx, r.bucket); err != nil {
		return err
	}
	return writeXML(c, http.StatusOK, versioningConfigurationXML{})
}
