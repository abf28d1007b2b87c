// The monitor face: the node's open pages, outside SigV4. GET /healthz
// (liveness, always open), GET /readyz (readiness: the node serves from
// its cache, or with MonitorOptions.ReadyNeedsOrigin also reaches its
// origin; always open) and GET /metrics (open, or behind a bearer token:
// MonitorOptions.MetricsToken). A request for those paths that carries
// SigV4 credentials is an S3 request for the bucket of that name. The web
// console's assets under /_granary/console/ are open too (package
// console; no bucket name starts with '_'), and a browser opening / is
// sent there; the traffic history it
// charts is sampled here (monitor_history.go) and served by the signed
// admin API.
package api

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/granary-dev/granary/console"
	"github.com/granary-dev/granary/gateway"
	"github.com/granary-dev/granary/ops/history"
)

// MonitorOptions configure the monitor face. Engine is required.
type MonitorOptions struct {
	Engine *gateway.Engine
	// Region is the one the console names; "" means us-east-1.
	Region string
	// Gatherer serves /metrics (nil: /metrics answers 404) and the
	// origin's figures of the history.
	Gatherer prometheus.Gatherer
	// MetricsToken, if set, puts /metrics behind a bearer token: a scrape
	// must send "Authorization: Bearer T" with T what MetricsToken returns
	// then (so the token can change while the node runs). It is called
	// once per scrape that carries a token; an empty result refuses them
	// all. Nil: /metrics is open. /healthz is always open.
	MetricsToken func() []byte
	// ReadyNeedsOrigin makes /readyz answer 503 while the origin is down
	// (--serve-stale-when-down=false); by default ready means the cache
	// is up, since it serves what it holds whatever the origin does.
	ReadyNeedsOrigin bool
	// HistoryEvery is how often the node samples its traffic for
	// /_granary/history (the console's charts), which keeps the last
	// hour; 0 means history.DefaultEvery (5 s).
	HistoryEvery time.Duration
}

// Monitor is the monitor face.
type Monitor struct {
	*core
	opts         MonitorOptions
	engine       *gateway.Engine
	console      *console.Handler  // the web console's assets
	recorder     *history.Recorder // the last hour's traffic, sampled from Serve to Shutdown
	recorderOnce sync.Once         // starts the recorder (see start)
}

// NewMonitor returns the monitor face of o.
func NewMonitor(o MonitorOptions) (*Monitor, error) {
	if o.Engine == nil {
		return nil, errors.New("api: the monitor's Engine is required")
	}
	m := &Monitor{opts: o, engine: o.Engine}
	var err error
	if m.console, err = console.New(console.Options{Region: regionOr(o.Region)}); err != nil {
		return nil, err
	}
	m.recorder = m.newRecorder()
	return m, nil
}

func (m *Monitor) mount(c *core) { m.core = c }

// healthOp is the operation of a path a GET may ask the monitor for,
// opUnknown for any other path.
func healthOp(path []byte) op {
	switch string(path) {
	case "/healthz":
		return opHealthz
	case "/readyz":
		return opReadyz
	case "/metrics":
		return opMetrics
	}
	return opUnknown
}

// claims takes the console's paths, a browser's visit of / (see
// browserVisit), and a GET of /healthz, /readyz or /metrics unless it is
// signed (a bearer token for /metrics is no S3 signature): a signed one
// is the S3 request of that bucket.
func (m *Monitor) claims(c *fiber.Ctx, r *request) bool {
	path := c.Request().URI().PathOriginal()
	if console.Match(path) {
		return true
	}
	if r.method != mGET {
		return false
	}
	if browserVisit(c) {
		return true
	}
	o := healthOp(path)
	return o != opUnknown && (!isSigned(c) || (o == opMetrics && bearerToken(c) != nil))
}

// browserVisit reports whether a GET is a person's browser opening the
// node's address: the path / with no query, unsigned, accepting HTML. It
// is sent to the console instead of S3's AccessDenied. S3 clients never
// ask for HTML (boto3, the aws cli and minio-go send no Accept, or
// */*), and a signed or anonymous ListBuckets of theirs is still S3's.
func browserVisit(c *fiber.Ctx) bool {
	uri := c.Request().URI()
	return string(uri.PathOriginal()) == "/" && len(uri.QueryString()) == 0 && !isSigned(c) &&
		bytes.Contains(c.Request().Header.Peek("Accept"), []byte("text/html"))
}

// serve answers a claimed request; it returns no error, having written
// its answer.
func (m *Monitor) serve(c *fiber.Ctx, r *request) error {
	path := c.Request().URI().PathOriginal()
	if console.Match(path) {
		r.op = opConsole
		m.console.Serve(c)
		return nil
	}
	if string(path) == "/" {
		r.op = opConsole
		console.Redirect(c)
		return nil
	}
	r.op = healthOp(path)
	resp := c.Response()
	switch r.op {
	case opHealthz:
		resp.Header.SetContentType("text/plain; charset=utf-8")
		resp.SetBodyString("ok")
		resp.SetStatusCode(http.StatusOK)
	case opReadyz:
		m.serveReadyz(c)
	case opMetrics:
		if m.metricsAllowed(c) {
			m.serveMetrics(c, r)
		}
	}
	return nil
}

// serveReadyz answers readiness. The listener is up and the cache answers
// from here on (a node never starts serving before its tiers are open);
// with ReadyNeedsOrigin, an origin that is down makes the node unready.
// The body names the origin's state when it is down, either way.
func (m *Monitor) serveReadyz(c *fiber.Ctx) {
	resp := c.Response()
	resp.Header.SetContentType("text/plain; charset=utf-8")
	h, known := m.engine.OriginHealth()
	switch {
	case !known || h.Up():
		resp.SetBodyString("ready")
		resp.SetStatusCode(http.StatusOK)
	case m.opts.ReadyNeedsOrigin:
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
func (m *Monitor) metricsAllowed(c *fiber.Ctx) bool {
	if m.opts.MetricsToken == nil {
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
	want := m.opts.MetricsToken()
	gs, ws := sha256.Sum256(got), sha256.Sum256(want)
	if len(want) == 0 || subtle.ConstantTimeCompare(gs[:], ws[:]) != 1 {
		resp.SetStatusCode(http.StatusForbidden)
		resp.SetBodyString("wrong bearer token\n")
		return false
	}
	return true
}

// serveMetrics writes the Gatherer's metrics in the Prometheus text format.
func (m *Monitor) serveMetrics(c *fiber.Ctx, r *request) {
	resp := c.Response()
	resp.Header.SetContentType("text/plain; charset=utf-8")
	if m.opts.Gatherer == nil {
		resp.SetStatusCode(http.StatusNotFound)
		resp.SetBodyString("no metrics are gathered on this node\n")
		return
	}
	families, err := m.opts.Gatherer.Gather()
	if err != nil {
		// Gather returns what it could alongside the error; serve that.
		m.reqLog(r).Warn().Err(err).Msg("gathering metrics")
	}
	format := expfmt.NewFormat(expfmt.TypeTextPlain)
	enc := expfmt.NewEncoder(resp.BodyWriter(), format)
	for _, mf := range families {
		if err := enc.Encode(mf); err != nil {
			m.reqLog(r).Error().Err(err).Msg("encoding metrics")
			resp.ResetBody()
			resp.SetStatusCode(http.StatusInternalServerError)
			return
		}
	}
	resp.Header.SetContentType(string(format))
	resp.SetStatusCode(http.StatusOK)
}
