// The tagging operations: Get/Put/DeleteObjectTagging (?tagging on an
// object) and Get/Put/DeleteBucketTagging (?tagging on a bucket). Tags
// live at the origin; an object's read grant lets a key read its tags and
// its write grant change them, a bucket-wide grant does the same for the
// bucket's.
package api

import (
	"net/http"

	"github.com/gofiber/fiber/v2"

	"github.com/granary-dev/granary/api/s3err"
)

// maxTaggingBody bounds a Tagging document (50 tags of 128 + 256
// characters, 4 bytes each, with their markup, fit well within it).
const maxTaggingBody = 256 << 10

func (s objects) getObjectTagging(c *fiber.Ctx, r *request) error {
	tags, err := s.engine.ObjectTags(r.ctx, r.bucket, r.key)
	if err != nil {
		return err
	}
	return writeXML(c, http.StatusOK, newTaggingXML(tags))
}

func (s objects) putObjectTagging(c *fiber.Ctx, r *request) error {
	tags, err := readTagging(r, maxObjectTags)
	if err != nil {
		return err
	}
	if err := s.engine.SetObjectTags(r.ctx, r.bucket, r.key, tags); err != nil {
		return err
	}
	c.Response().SetStatusCode(http.StatusOK)
	return nil
}

func (s objects) deleteObjectTagging(c *fiber.Ctx, r *request) error {
	if err := s.engine.SetObjectTags(r.ctx, r.bucket, r.key, nil); err != nil {
		return err
	}
	c.Response().SetStatusCode(http.StatusNoContent)
	return nil
}

func (s buckets) getBucketTagging(c *fiber.Ctx, r *request) error {
	tags, err := s.engine.BucketTags(r.ctx, r.bucket)
	if err != nil {
		return err
	}
	if tags == nil {
		return s3err.New(s3err.NoSuchTagSet, "")
	}
	return writeXML(c, http.StatusOK, newTaggingXML(tags))
}

func (s buckets) putBucketTagging(c *fiber.Ctx, r *request) error {
	tags, err := readTagging(r, maxBucketTags)
	if err != nil {
		return err
	}
	if err := s.engine.SetBucketTags(r.ctx, r.bucket, tags); err != nil {
		return err
	}
	c.Response().SetStatusCode(http.StatusNoContent)
	return nil
}

func (s buckets) deleteBucketTagging(c *fiber.Ctx, r *request) error {
	if err := s.engine.SetBucketTags(r.ctx, r.bucket, nil); err != nil {
		return err
	}
	c.Response().SetStatusCode(http.StatusNoContent)
	return nil
}

// readTagging reads and checks the Tagging document of r's body.
func readTagging(r *request, max int) (map[string]string, error) {
	var doc taggingXML // Content-MD5 is checked by the sigv4 body
	if err := decodeXMLBodyLimit(r.auth.Body, &doc, maxTaggingBody); err != nil {
		return nil, err
	}
	return doc.tagsOf(max)
}
