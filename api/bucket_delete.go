// DeleteBucket (DELETE /bucket): only an empty bucket can go.
package api

import (
	"net/http"

	"github.com/gofiber/fiber/v2"
)

func (s buckets) deleteBucket(c *fiber.Ctx, r *request) error {
	if err := s.engine.DeleteBucket(r.ctx, r.bucket); err != nil {
		return err
	}
	c.Response().SetStatusCode(http.StatusNoContent)
	return nil
}
