// The life of one request: the entry handler gives it an id, hands it to
// the face that claims it (faces.go), writes the error that face returned,
// and reports it (metrics and the access log) once the response is
// complete. core is this plumbing, shared by the server and its faces.
package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/rs/xid"
	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"github.com/granary-dev/granary/access"
	"github.com/granary-dev/granary/api/s3err"
	"github.com/granary-dev/granary/api/sigv4"
	"github.com/granary-dev/granary/gateway"
	"github.com/granary-dev/granary/store"
)

// request is the state of one request. It holds only copies, never slices
// of the fasthttp request, so a streamed response may report it after the
// handler returned. It is used by one goroutine at a time: the connection's,
// which runs the handler and then writes the response.
type request struct {
	id     string
	ctx    context.Context // the server's base context, carrying id (gateway.WithRequestID)
	start  time.Time
	op     op
	method string
	bucket string
	key    string
	auth   *sigv4.Result
	policy *access.Policy // what the caller may do; set once authenticated
	body   *bodyReader    // the wire body; nil when the request has none
	// authResult is what auth points to once authenticated: a request
	// is allocated anyway, its Result need not be.
	authResult sigv4.Result

	status    int
	errCode   s3err.Code // the S3 error answered, if any
	cause     error      // what a known server-side failure (5xx) came from, for the log
	streaming bool       // the body is streamed: objectStream reports it
	tooLarge  bool       // a PUT declaring more than maxPutBody, kept from a 100 Continue
	logger    *zerolog.Logger
}

// newRequestID returns a unique, sortable request id (xid: time, host,
// process and a counter; no lock, no syscall).
func newRequestID() string { return xid.New().String() }

// requestKey is the fiber Locals key of the *request.
type requestKey struct{}

func requestOf(c *fiber.Ctx) *request {
	r, _ := c.Locals(requestKey{}).(*request)
	return r
}

// core is what the server and its faces share: the request log and
// metrics, the object bytes served, the context requests run under and
// the I/O timeout. New builds one per Server and mounts it on each face;
// it is read-only after New but for the counters, which are safe for
// concurrent use.
type core struct {
	log       zerolog.Logger
	metrics   *metrics
	served    servedBytes // object bytes sent, for the monitor's history
	ioTimeout time.Duration
	// baseCtx parents every request's context, through parents; the
	// Server cancels it (and them) when a Shutdown runs out of time.
	baseCtx context.Context
	parents *parents
}

// reqLog returns the request's logger, which carries its id. It is built
// on first use, so a request that logs nothing costs no logger.
func (s *core) reqLog(r *request) *zerolog.Logger {
	if r.logger == nil {
		l := s.log.With().Str("request_id", r.id).Logger()
		r.logger = &l
	}
	return r.logger
}

// entry is the only fiber handler: every request passes through it.
func (s *Server) entry(c *fiber.Ctx) error {
	r := s.newRequest(methodString(c.Request().Header.Method()))
	r.tooLarge = restoreTooLarge(&c.Request().Header)
	setRequestID(sinkOf(&c.Response().Header), r.id)
	c.Locals(requestKey{}, r)
	defer s.recoverPanic(c, r)

	if err := s.faceOf(c, r).serve(c, r); err != nil {
		s.writeError(c, err)
	}
	s.finish(c, r)
	s.handBack(c, r)
	return nil
}

// newRequest starts a request: its id, its start and its context.
func (s *core) newRequest(method string) *request {
	r := &request{id: newRequestID(), start: time.Now(), method: method}
	r.ctx = gateway.WithRequestID(s.parents.pick(), r.id)
	return r
}

// setRequestID sets the headers that name a request's id.
func setRequestID(h headerSink, id string) {
	h.set("X-Amz-Request-Id", id)
	h.set("X-Amz-Id-2", id)
}

// recoverPanic turns a handler panic into an InternalError, so one bad
// request never takes the node down.
func (s *core) recoverPanic(c *fiber.Ctx, r *request) {
	p := recover()
	if p == nil {
		return
	}
	s.reqLog(r).Error().Str("panic", fmt.Sprint(p)).Str("op", r.op.String()).Msg("handler panic")
	c.Response().ResetBody()
	r.streaming = false
	s.writeError(c, s3err.New(s3err.InternalError, ""))
	s.finish(c, r)
}

// finish ends the handler's part of r: a request whose body was not read
// to its end closes its connection (the unread bytes would be taken for
// the next request), and r is reported unless a stream will report it.
func (s *core) finish(c *fiber.Ctx, r *request) {
	r.status = c.Response().StatusCode()
	if r.body != nil && !r.body.drained() {
		c.Response().SetConnectionClose()
		lingerOnClose(c.Context().Conn())
	}
	if r.streaming {
		return
	}
	s.report(r, bodyBytes(c.Response()), nil)
}

// bodyBytes is the length of resp's body, without reading a body set as
// a stream: fasthttp's Body() would read it into a buffer first, and the
// response would leave as a copy of it (an in-memory body is a stream
// so that it is not copied: internal/membody).
func bodyBytes(resp *fasthttp.Response) int64 {
	if resp.IsBodyStream() {
		return int64(max(resp.Header.ContentLength(), 0))
	}
	return int64(len(resp.Body()))
}

// report records a finished request in the metrics and the access log.
// Routine outcomes log at debug, client mistakes at warn, server failures
// (and responses cut short) at error; a request refused because the
// origin is down logs at debug (the outage is logged once, by the guard).
// A 501 NotImplemented answers a client asking for what Granary does not
// serve (an ACL grant, a bucket policy): a client matter, logged at warn.
func (s *core) report(r *request, bytes int64, streamErr error) {
	elapsed := time.Since(r.start)
	s.metrics.observe(r.op, r.status, elapsed.Seconds())
	s.served.add(r, bytes)
	var ev *zerolog.Event
	switch {
	case errors.Is(r.cause, store.ErrOriginDown) && streamErr == nil:
		ev = s.log.Debug() // the origin's guard logged the outage once
	case (r.status >= 500 && r.status != http.StatusNotImplemented) ||
		(streamErr != nil && !errors.Is(streamErr, errClientGone)):
		ev = s.log.Error()
	case (r.status >= 400 && !routineStatus(r.status)) || streamErr != nil:
		ev = s.log.Warn()
	default:
		ev = s.log.Debug()
	}
	if ev == nil { // level disabled
		return
	}
	ev = ev.Str("request_id", r.id).Str("op", r.op.String()).Str("method", r.method).
		Str("bucket", r.bucket).Str("key", r.key).Int("status", r.status).
		Int64("bytes", bytes).Dur("duration", elapsed)
	if r.auth != nil {
		ev = ev.Str("access_key", r.auth.AccessKey)
	}
	if r.errCode != "" {
		ev = ev.Str("error_code", string(r.errCode))
	}
	if r.cause != nil {
		ev = ev.AnErr("cause", r.cause)
	}
	if streamErr != nil {
		ev = ev.AnErr("stream_error", streamErr)
	}
	ev.Msg("request")
}

// routineStatus reports 4xx answers that are part of normal operation
// (existence checks, conditional and ranged reads).
func routineStatus(code int) bool {
	switch code {
	case http.StatusNotFound, http.StatusNotModified, http.StatusPreconditionFailed,
		http.StatusRequestedRangeNotSatisfiable:
		return true
	}
	return false
}
