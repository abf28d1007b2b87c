// Authentication: the sigv4.Request built from the fasthttp request as it
// came off the wire, and the wire body reader every S3 body is read through.
package api

import (
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/granary-dev/granary/api/s3err"
	"github.com/granary-dev/granary/api/sigv4"
	"github.com/granary-dev/granary/store"
)

// authenticate verifies r's signature. On success the request body may be
// read only through the Result's Body.
func (s *S3) authenticate(c *fiber.Ctx, r *request) (*sigv4.Result, error) {
	req := c.Request()
	header, contentLength := wireHeaders(&req.Header)
	var body io.Reader = http.NoBody
	if stream := c.Context().RequestBodyStream(); stream != nil {
		r.body = newBodyReader(stream, contentLength, c.Context().Conn(), s.ioTimeout)
		body = r.body
	}
	host := string(req.Header.Host())
	vbucket, _ := hostBucket(host, s.domainSuffixes)
	return s.verifier.Verify(&sigv4.Request{
		Method:        r.method,
		RawPath:       string(req.URI().PathOriginal()),
		RawQuery:      string(req.URI().QueryString()),
		Host:          host,
		Header:        header,
		Body:          body,
		ContentLength: contentLength,
		VirtualBucket: vbucket,
	})
}

// wireHeaders returns the request headers exactly as received (fasthttp
// rewrites some, such as a missing Content-Length, once it has read them)
// and the Content-Length header's value, -1 if absent or unparsable.
func wireHeaders(h *fasthttp.RequestHeader) (http.Header, int64) {
	header := make(http.Header, 16)
	contentLength := int64(-1)
	h.VisitAllInOrder(func(k, v []byte) {
		key := http.CanonicalHeaderKey(string(k))
		header[key] = append(header[key], string(v))
		if key == "Content-Length" {
			if n, err := strconv.ParseInt(string(v), 10, 64); err == nil && n >= 0 {
				contentLength = n
			}
		}
	})
	return header, contentLength
}

// isSigned reports whether a request carries credentials: an
// Authorization header, or a SigV4 or SigV2 presigned query.
func isSigned(c *fiber.Ctx) bool {
	if len(c.Request().Header.Peek("Authorization")) > 0 {
		return true
	}
	args := c.Request().URI().QueryArgs()
	return args.Has("X-Amz-Signature") || args.Has("X-Amz-Credential") ||
		args.Has("Signature") || args.Has("AWSAccessKeyId")
}

// bodyReader reads the wire body. It renews the connection's read
// deadline as bytes arrive (so only a stalled upload times out), turns a
// body that ends before its Content-Length into store.ErrIncompleteBody,
// and remembers its first error: a consumer that wraps that error in its
// own still fails, and the handler can answer with the real cause.
type bodyReader struct {
	r       io.Reader
	want    int64 // Content-Length, -1 when unknown (chunked)
	n       int64 // bytes read so far
	eof     bool
	err     error
	conn    net.Conn
	timeout time.Duration
	renewed time.Time // when the read deadline was last pushed back
}

func newBodyReader(r io.Reader, want int64, conn net.Conn, timeout time.Duration) *bodyReader {
	return &bodyReader{r: r, want: want, conn: conn, timeout: timeout}
}

func (b *bodyReader) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.eof {
		return 0, io.EOF
	}
	b.renewDeadline()
	n, err := b.r.Read(p)
	b.n += int64(n)
	switch {
	case err == nil:
		if b.want >= 0 && b.n > b.want {
			b.err = s3err.New(s3err.IncompleteBody, "the body is longer than its Content-Length")
			return 0, b.err
		}
	case errors.Is(err, io.EOF):
		if b.want >= 0 && b.n != b.want {
			b.err = store.ErrIncompleteBody
			return n, b.err
		}
		b.eof = true
	default:
		b.err = bodyError(err)
		return n, b.err
	}
	return n, err
}

// bodyError translates a failed body read.
func bodyError(err error) error {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return s3err.New(s3err.RequestTimeout, "")
	}
	return store.ErrIncompleteBody
}

// renewGap is how often a transfer pushes its deadline back: a deadline
// change is not free, and reads and writes come in small pieces.
func renewGap(timeout time.Duration) time.Duration { return min(time.Second, timeout/4) }

// renewDeadline pushes the read deadline back, at most once per renewGap.
func (b *bodyReader) renewDeadline() {
	if b.conn == nil {
		return
	}
	now := time.Now()
	if now.Sub(b.renewed) < renewGap(b.timeout) {
		return
	}
	b.renewed = now
	_ = b.conn.SetReadDeadline(now.Add(b.timeout))
}

// drained reports whether the body was read to its end (so the connection
// can carry another request).
func (b *bodyReader) drained() bool {
	return b.eof || (b.err == nil && b.want >= 0 && b.n == b.want)
}

// failure returns the first error the body returned, if any.
func (b *bodyReader) failure() error {
	if b == nil {
		return nil
	}
	return b.err
}
