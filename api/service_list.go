// ListBuckets (GET /): the buckets the caller's policy sees.
package api

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"

	"github.com/gofiber/fiber/v2"
)

func (s buckets) listBuckets(c *fiber.Ctx, r *request) error {
	buckets, err := s.engine.ListBuckets(r.ctx)
	if err != nil {
		return err
	}
	out := listAllMyBucketsResult{Owner: ownerOf(r), Buckets: make([]bucketXML, 0, len(buckets))}
	for _, b := range buckets {
		if !r.policy.Sees(b.Name) {
			continue
		}
		out.Buckets = append(out.Buckets, bucketXML{Name: b.Name, CreationDate: xmlTime(b.Created)})
	}
	return writeXML(c, http.StatusOK, out)
}

// ownerOf is the owner Granary reports: the caller's access key, with an
// opaque canonical id derived from it (every bucket belongs to whoever may
// sign requests).
func ownerOf(r *request) ownerXML {
	key := ""
	if r.auth != nil {
		key = r.auth.AccessKey
	}
	sum := sha256.Sum256([]byte("granary-owner:" + key))
	return ownerXML{ID: hex.EncodeToString(sum[:]), DisplayName: key}
}
