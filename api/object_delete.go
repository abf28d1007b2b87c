// DeleteObject (DELETE /bucket/key): 204 whether or not the key existed.
package api

import (
	"errors"
	"net/http"

	"github.com/gofiber/fiber/v2"

	"github.com/granary-dev/granary/store"
)

func (s objects) deleteObject(c *fiber.Ctx, r *request) error {
	if err := s.engine.Delete(r.ctx, r.bucket, r.key); err != nil && !errors.Is(err, store.ErrNoSuchKey) {
		return err
	}
	c.Response().SetStatusCode(http.StatusNoContent)
	return nil
}
