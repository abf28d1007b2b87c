// The node's recent traffic through the signed admin API (the console's
// charts):
//
//	GET /_granary/history              node-wide (node-wide admin rights)
//	GET /_granary/history?bucket=B     one bucket (admin rights on B)
//
// Each answers 200 with a HistoryAnswer: the figures of each interval of
// the last hour, oldest first, sampled by this node only (not its
// cluster). A bucket's figures leave out the origin's, which are not
// counted per bucket.
package api

import (
	"github.com/gofiber/fiber/v2"

	"github.com/granary-dev/granary/ops/history"
)

// historyRoute is the path of the history call.
const historyRoute = "/_granary/history"

// HistoryAnswer is the answer of a history call.
type HistoryAnswer struct {
	// Every is the sampling interval in seconds.
	Every  float64         `json:"every"`
	Bucket string          `json:"bucket,omitempty"`
	Points []history.Point `json:"points"`
}

// history answers an authenticated history call (authorizeAdmin checked
// the bucket, or node-wide rights without one).
func (a *Admin) history(c *fiber.Ctx, r *request) error {
	rec := a.opts.History.recorder
	bucket := string(c.Request().URI().QueryArgs().Peek("bucket"))
	out := HistoryAnswer{Every: rec.Every().Seconds(), Bucket: bucket}
	if bucket == "" {
		out.Points = rec.Node()
	} else {
		r.bucket = bucket
		if err := checkBucket(bucket); err != nil {
			return err
		}
		out.Points = rec.Bucket(bucket)
	}
	return c.JSON(out)
}
