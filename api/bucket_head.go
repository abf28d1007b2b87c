// HeadBucket (HEAD /bucket).
package api

import (
	"net/http"

	"github.com/gofiber/fiber/v2"
)

func (s buckets) headBucket(c *fiber.Ctx, r *request) error {
	if err := s.engine.HeadBucket(r.ctx, r.bucket); err != nil {
		return err
	}
	c.Response().Header.Set("X-Amz-Bucket-Region", s.opts.Region)
	c.Response().SetStatusCode(http.StatusOK)
	return nil
}
