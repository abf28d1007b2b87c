// The write-back backlog through the signed admin API (the console's
// write-back panel):
//
//	GET /_granary/writeback    node-wide admin rights
//
// answers a WriteBackAnswer read from the node's metrics (the log's own
// gauges and counters): what waits for the origin, the limit past which
// writes are slowed, and the uploads done and failed since start. A node
// without a write-back log answers Enabled false. The backlog is flushed
// with POST /_granary/flush (admin_api.go).
package api

import (
	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
)

// writeBackRoute is the path of the backlog call.
const writeBackRoute = "/_granary/writeback"

// WriteBackAnswer is this node's write-back backlog.
type WriteBackAnswer struct {
	Enabled      bool  `json:"enabled"`
	DirtyBytes   int64 `json:"dirtyBytes"`
	DirtyObjects int64 `json:"dirtyObjects"`
	// LimitBytes is --dirty-limit: past it, writes get 503 SlowDown.
	LimitBytes    int64 `json:"limitBytes"`
	Uploads       int64 `json:"uploads"`
	FailedUploads int64 `json:"failedUploads"`
}

// writeBack answers an authenticated backlog call (authorizeAdmin
// checked node-wide rights: the backlog is every bucket's).
func (a *Admin) writeBack(c *fiber.Ctx, _ *request) error {
	return c.JSON(writeBackOf(a.opts.History.opts.Gatherer))
}

// writeBackOf reads the write-back log's figures in g; Enabled only if
// the log's metrics are there.
func writeBackOf(g prometheus.Gatherer) WriteBackAnswer {
	var out WriteBackAnswer
	if g == nil {
		return out
	}
	families, _ := g.Gather() // what could be gathered is enough for a panel
	for _, mf := range families {
		for _, m := range mf.GetMetric() {
			gauge, counter := int64(m.GetGauge().GetValue()), int64(m.GetCounter().GetValue())
			switch mf.GetName() {
			case "granary_writeback_dirty_bytes":
				out.Enabled, out.DirtyBytes = true, gauge
			case "granary_writeback_dirty_objects":
				out.DirtyObjects = gauge
			case "granary_writeback_dirty_limit_bytes":
				out.LimitBytes = gauge
			case "granary_writeback_uploads_total":
				out.FailedUploads += counter // unless its result is ok:
				for _, l := range m.GetLabel() {
					if l.GetName() == "result" && l.GetValue() == "ok" {
						out.FailedUploads -= counter
						out.Uploads += counter
					}
				}
			}
		}
	}
	return out
}
