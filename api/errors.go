// The one error writer: every failure of a request, whatever layer it came
// from, is translated here into an S3 error response (or, for a client
// that is gone, into none).
package api

import (
	"context"
	"errors"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/granary-dev/granary/api/s3err"
	"github.com/granary-dev/granary/gateway"
	"github.com/granary-dev/granary/ops"
	"github.com/granary-dev/granary/store"
)

// statusClientClosed is what a request whose client went away is counted
// as (nginx's convention); nothing is sent, the connection is closed.
const statusClientClosed = 499

// sentinels maps the store and gateway errors to S3 codes.
var sentinels = []struct {
	err  error
	code s3err.Code
}{
	{store.ErrNoSuchBucket, s3err.NoSuchBucket},
	{store.ErrNoSuchKey, s3err.NoSuchKey},
	{store.ErrBucketExists, s3err.BucketAlreadyOwnedByYou},
	{store.ErrBucketNotEmpty, s3err.BucketNotEmpty},
	{store.ErrInvalidBucketName, s3err.InvalidBucketName},
	{store.ErrInvalidKey, s3err.InvalidArgument},
	{store.ErrAccessDenied, s3err.AccessDenied},
	// The origin's breaker is open: fail at once, and say when to retry
	// (see writeError). Before ErrUnavailable, which it wraps.
	{store.ErrOriginDown, s3err.SlowDown},
	{store.ErrUnavailable, s3err.ServiceUnavailable},
	// The object changed at the origin while it was read: the read is
	// abandoned rather than mixing versions, and the client may retry.
	{store.ErrPreconditionFailed, s3err.ServiceUnavailable},
	{store.ErrIncompleteBody, s3err.IncompleteBody},
	{gateway.ErrInvalidRange, s3err.InvalidRange},
	{gateway.ErrCopyUnsupported, s3err.NotImplemented},
	{store.ErrNotSupported, s3err.NotImplemented},
	{store.ErrNoSuchUpload, s3err.NoSuchUpload},
	{store.ErrInvalidPart, s3err.InvalidPart},
	{store.ErrInvalidPartOrder, s3err.InvalidPartOrder},
	{store.ErrEntityTooSmall, s3err.EntityTooSmall},
	// S3's InvalidPartNumber is a GET of a part beyond the object's count
	// (416); a part number out of 1..10000 in an upload is InvalidArgument.
	{store.ErrInvalidPartNumber, s3err.InvalidArgument},
	{store.ErrSlowDown, s3err.SlowDown},
	// No working memory came free in time: too many reads hold chunks
	// their clients have not taken (see gateway/budget.go).
	{gateway.ErrBusy, s3err.SlowDown},
	{gateway.ErrReadOnly, s3err.AccessDenied},
	{gateway.ErrMultipartUnsupported, s3err.NotImplemented},
	{ops.ErrNoCatalog, s3err.NotImplemented},
	{gateway.ErrNoPins, s3err.NotImplemented},
}

// retryAfter is the Retry-After of a SlowDown, in seconds: the origin's
// guard probes a down origin every second (guard.Options.ProbeInterval),
// the write-back log frees room as uploads land, and the working memory
// as readers take their chunks.
const retryAfter = "1"

// toS3 translates err. It returns nil for a request whose client is gone
// (context cancelled), and known=false for an error no layer translated.
func toS3(err error) (e *s3err.Error, known bool) {
	if se, ok := s3err.As(err); ok {
		return se, true
	}
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			return s3err.New(s.code, ""), true
		}
	}
	var oe *store.OriginError
	if errors.As(err, &oe) {
		return fromOrigin(oe), true
	}
	if errors.Is(err, context.Canceled) {
		return nil, true
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return s3err.New(s3err.ServiceUnavailable, "the origin did not answer in time"), true
	}
	return s3err.New(s3err.InternalError, ""), false
}

// fromOrigin is the S3 error of an origin's refusal of a request: the
// origin's code, message and status, so a client sees what the origin
// would have told it.
func fromOrigin(oe *store.OriginError) *s3err.Error {
	msg := oe.Message
	if msg == "" {
		msg = "The origin refused the request."
	}
	return &s3err.Error{Code: s3err.Code(oe.Code), Message: msg, HTTPStatus: oe.Status}
}

// writeError answers the request with err. HEAD responses and 304s carry
// no body; every other error carries the S3 XML document with the request
// id. Errors no layer translated are logged and become InternalError.
func (s *core) writeError(c *fiber.Ctx, err error) {
	r := requestOf(c)
	if r == nil { // cannot happen for requests that passed entry
		r = &request{id: string(c.Response().Header.Peek("X-Amz-Request-Id"))}
	}
	s.answerError(c.Response(), r, err)
}

// answerError sets resp to r's answer err (writeError; the GET lane's
// answers, lane_get.go).
func (s *core) answerError(resp *fasthttp.Response, r *request, err error) {
	e, known := toS3(err)
	if !known {
		s.reqLog(r).Error().Err(err).Str("op", r.op.String()).
			Str("bucket", r.bucket).Str("key", r.key).Msg("internal error")
	}
	resp.ResetBody()
	if e == nil {
		r.errCode = "ClientClosed"
		resp.SetStatusCode(statusClientClosed)
		resp.SetConnectionClose()
		return
	}
	r.errCode = e.Code
	if known && e.Status() >= 500 {
		r.cause = err // the answer says only "unavailable"; the log says why
	}
	resp.SetStatusCode(e.Status())
	if e.Code == s3err.SlowDown {
		resp.Header.Set("Retry-After", retryAfter)
	}
	if r.method == mHEAD || e.Code == s3err.NotModified {
		return
	}
	resp.Header.SetContentType(contentTypeXML)
	resp.SetBodyRaw(s3err.Marshal(e, r.bucket, r.key, resourceOf(r), r.id))
}

// resourceOf is the Resource element of an error: the addressed path.
func resourceOf(r *request) string {
	switch {
	case r.bucket == "":
		return "/"
	case r.key == "":
		return "/" + r.bucket
	}
	return "/" + r.bucket + "/" + r.key
}

// protocolError is fiber's error handler: it answers requests fasthttp
// could not parse (headers too large, timeouts, bad framing), which never
// reach entry.
func (s *Server) protocolError(c *fiber.Ctx, err error) error {
	if silenceIfUnused(c.Context().Conn()) {
		return nil // nothing was asked: the connection just closes
	}
	code := s3err.InvalidRequest
	var fe *fiber.Error
	if errors.As(err, &fe) {
		switch fe.Code {
		case fiber.StatusRequestHeaderFieldsTooLarge:
			code = s3err.RequestHeaderSectionTooLarge
		case fiber.StatusRequestTimeout:
			code = s3err.RequestTimeout
		case fiber.StatusRequestEntityTooLarge:
			code = s3err.EntityTooLarge
		case fiber.StatusMethodNotAllowed:
			code = s3err.MethodNotAllowed
		}
	}
	r := &request{start: time.Now(), id: newRequestID(), method: methodString(c.Request().Header.Method())}
	c.Locals(requestKey{}, r)
	setRequestID(sinkOf(&c.Response().Header), r.id)
	c.Response().SetConnectionClose()
	s.writeError(c, s3err.New(code, ""))
	r.status = c.Response().StatusCode()
	s.report(r, bodyBytes(c.Response()), nil)
	return nil
}
