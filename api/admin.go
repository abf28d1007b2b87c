// Unauthenticated admin routes: GET /healthz and GET /metrics. A request
// for those paths that carries SigV4 credentials is an S3 request for the
// bucket of that name.
package api

import (
	"net/http"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/common/expfmt"
)

// serveAdmin answers r if it is an admin request, and reports whether it was.
func (s *Server) serveAdmin(c *fiber.Ctx, r *request) bool {
	if r.method != mGET {
		return false
	}
	switch string(c.Request().URI().PathOriginal()) {
	case "/healthz":
		r.op = opHealthz
	case "/metrics":
		r.op = opMetrics
	default:
		return false
	}
	if isSigned(c) {
		r.op = opUnknown
		return false
	}
	resp := c.Response()
	if r.op == opHealthz {
		resp.Header.SetContentType("text/plain; charset=utf-8")
		resp.SetBodyString("ok")
		resp.SetStatusCode(http.StatusOK)
		return true
	}
	s.serveMetrics(c, r)
	return true
}

// serveMetrics writes the Gatherer's metrics in the Prometheus text format.
func (s *Server) serveMetrics(c *fiber.Ctx, r *request) {
	resp := c.Response()
	resp.Header.SetContentType("text/plain; charset=utf-8")
	if s.opts.Gatherer == nil {
		resp.SetStatusCode(http.StatusNotFound)
		resp.SetBodyString("no metrics are gathered on this node\n")
		return
	}
	families, err := s.opts.Gatherer.Gather()
	if err != nil {
		// Gather returns what it could alongside the error; serve that.
		s.reqLog(r).Warn().Err(err).Msg("gathering metrics")
	}
	format := expfmt.NewFormat(expfmt.TypeTextPlain)
	enc := expfmt.NewEncoder(resp.BodyWriter(), format)
	for _, mf := range families {
		if err := enc.Encode(mf); err != nil {
			s.reqLog(r).Error().Err(err).Msg("encoding metrics")
			resp.ResetBody()
			resp.SetStatusCode(http.StatusInternalServerError)
			return
		}
	}
	resp.Header.SetContentType(string(format))
	resp.SetStatusCode(http.StatusOK)
}
