// Admin routes outside SigV4: GET /healthz (liveness, always open), GET
// /readyz (readiness: the node serves from its cache, or with
// Options.ReadyNeedsOrigin also reaches its origin; always open) and GET
// /metrics (open, or behind a bearer token: Options.MetricsToken). A request for
// those paths that carries SigV4 credentials is an S3 request for the
// bucket of that name. The web console's assets under /_granary/console/
// are open too (package console; no bucket name starts with '_').
package api

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/common/expfmt"

	"github.com/granary-dev/granary/console"
)

// serveAdmin answers r if it is an admin request, and reports whether it was.
func (s *Server) serveAdmin(c *fiber.Ctx, r *request) bool {
	if console.Match(c.Request().URI().PathOriginal()) {
		r.op = opConsole
		s.console.Serve(c)
		return true
	}
	if r.method != mGET {
		return false
	}
	switch string(c.Request().URI().PathOriginal()) {
	case "/healthz":
		r.op = opHealthz
	case "/readyz":
		r.op = opReadyz
	case "/metrics":
		r.op = opMetrics
	default:
		return false
	}
	if isSigned(c) && (r.op != opMetrics || bearerToken(c) == nil) {
		r.op = opUnknown
		return false
	}
	resp := c.Response()
	switch r.op {
	case opHealthz:
		resp.Header.SetContentType("text/plain; charset=utf-8")
		resp.SetBodyString("ok")
		resp.SetStatusCode(http.StatusOK)
		return true
	case opReadyz:
		s.serveReadyz(c)
		return true
	}
	if s.metricsAllowed(c) {
		s.serveMetrics(c, r)
	}
	return true
}

// serveReadyz answers readiness. The listener is up and the cache answers
// from here on (a node never starts serving before its tiers are open);
// with ReadyNeedsOrigin, an origin that is down makes the node unready.
// The body names the origin's state when it is down, either way.
func (s *Server) serveReadyz(c *fiber.Ctx) {
	resp := c.Response()
	resp.Header.SetContentType("text/plain; charset=utf-8")
	h, known := s.engine.OriginHealth()
	switch {
	case !known || h.Up():
		resp.SetBodyString("ready")
		resp.SetStatusCode(http.StatusOK)
	case s.opts.ReadyNeedsOrigin:
		resp.SetBodyString(fmt.Sprintf("not ready: origin down (%s) since %s\n", h.Cause, h.Since.UTC().Format(time.RFC3339)))
		resp.SetStatusCode(http.StatusServiceUnavailable)
	default:
		resp.SetBodyString(fmt.Sprintf("ready (serving from the cache; origin down (%s) since %s)\n", h.Cause, h.Since.UTC().Format(time.RFC3339)))
		resp.SetStatusCode(http.StatusOK)
	}
}

// bearerPrefix starts an Authorization header that carries a bearer
// token, not a SigV4 signature.
var bearerPrefix = []byte("Bearer ")

// bearerToken is the request's bearer token, nil if it has none.
func bearerToken(c *fiber.Ctx) []byte {
	auth := c.Request().Header.Peek("Authorization")
	if len(auth) < len(bearerPrefix) || !bytes.EqualFold(auth[:len(bearerPrefix)], bearerPrefix) {
		return nil
	}
	return bytes.TrimSpace(auth[len(bearerPrefix):])
}

// metricsAllowed reports whether a /metrics request may be answered, and
// answers it itself when not: 401 without a token, 403 with a wrong one.
// Tokens are compared by their SHA-256 in constant time, so neither the
// bytes nor the length of the right one leak through timing. An empty
// right token (none could be read) refuses every request.
func (s *Server) metricsAllowed(c *fiber.Ctx) bool {
	if s.opts.MetricsToken == nil {
		return true
	}
	resp := c.Response()
	resp.Header.SetContentType("text/plain; charset=utf-8")
	got := bearerToken(c)
	if len(got) == 0 {
		resp.Header.Set("WWW-Authenticate", `Bearer realm="granary metrics"`)
		resp.SetStatusCode(http.StatusUnauthorized)
		resp.SetBodyString("a bearer token is required\n")
		return false
	}
	want := s.opts.MetricsToken()
	gs, ws := sha256.Sum256(got), sha256.Sum256(want)
	if len(want) == 0 || subtle.ConstantTimeCompare(gs[:], ws[:]) != 1 {
		resp.SetStatusCode(http.StatusForbidden)
		resp.SetBodyString("wrong bearer token\n")
		return false
	}
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
