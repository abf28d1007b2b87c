// Authentication: the sigv4.Request built from the fasthttp request as it
// came off the wire, and the wire body reader every S3 body is read through.
package api

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
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
	w := wirePool.Get().(*wire)
	defer w.release()
	req := w.fill(c.Request())
	req.Body = http.NoBody
	if stream := c.Context().RequestBodyStream(); stream != nil {
		r.body = newBodyReader(stream, req.ContentLength, c.Context().Conn(), s.ioTimeout)
		req.Body = r.body
	}
	req.Method = r.method
	req.VirtualBucket, _ = hostBucket(req.Host, s.domainSuffixes)
	if err := s.verifier.VerifyInto(&req, &r.authResult); err != nil {
		return nil, err
	}
	return &r.authResult, nil
}

// wire is the working memory of one authenticate, recycled through
// wirePool: the request's path, query, host and header fields copied
// from fasthttp's buffers into one string (one allocation, however many
// fields), in one walk of the headers.
type wire struct {
	raw    []byte
	spans  []fieldSpan
	fields sigv4.Header
}

// fieldSpan is where one field's name and value lie in a buffer: wire.raw,
// or a GET lane connection's (laneConn.buf).
type fieldSpan struct{ name, value [2]int }

var wirePool = sync.Pool{New: func() any { return &wire{raw: make([]byte, 0, 1024)} }}

// release returns w to the pool unless it grew too large to keep; the
// fields are dropped so the pool does not pin the request's string.
func (w *wire) release() {
	if cap(w.raw) > 64<<10 || cap(w.fields) > 256 {
		return
	}
	clear(w.fields)
	wirePool.Put(w)
}

// fill returns the sigv4.Request of req but for its method, body and
// bucket. The headers are taken exactly as received (fasthttp rewrites
// some, such as a missing Content-Length, once it has read them), and
// ContentLength is the Content-Length header's value, -1 if absent or
// unparsable.
func (w *wire) fill(req *fasthttp.Request) sigv4.Request {
	raw := append(w.raw[:0], req.URI().PathOriginal()...)
	pathEnd := len(raw)
	raw = append(raw, req.URI().QueryString()...)
	queryEnd := len(raw)
	raw = append(raw, req.Header.Host()...)
	hostEnd := len(raw)
	w.raw, w.spans = raw, w.spans[:0]
	w.addFields(req)
	str := string(w.raw) // the one copy every string of the request shares
	out := sigv4.Request{
		RawPath: str[:pathEnd], RawQuery: str[pathEnd:queryEnd], Host: str[queryEnd:hostEnd],
		ContentLength: -1,
	}
	fields := w.fields[:0]
	for _, f := range w.spans {
		name, value := str[f.name[0]:f.name[1]], str[f.value[0]:f.value[1]]
		fields = append(fields, sigv4.Field{Name: name, Value: value})
		if strings.EqualFold(name, "Content-Length") {
			if n, err := strconv.ParseInt(value, 10, 64); err == nil && n >= 0 {
				out.ContentLength = n
			}
		}
	}
	w.fields, out.Header = fields, fields
	return out
}

// addFields appends req's header fields to w.raw in the order received,
// recording where each name and value lie. fasthttp parsed (and checked)
// the header block once already, so its lines are only split here: that
// costs a fraction of fasthttp's walk in order, which parses them again.
// A block with folded lines is left to that walk.
func (w *wire) addFields(req *fasthttp.Request) {
	rawLen, spansLen := len(w.raw), len(w.spans)
	block := req.Header.RawHeaders()
	for len(block) > 0 {
		line := block
		if i := bytes.IndexByte(block, '\n'); i >= 0 {
			line, block = block[:i], block[i+1:]
		} else {
			block = nil
		}
		if len(block) > 0 && (block[0] == ' ' || block[0] == '\t') {
			break // a folded line
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) == 0 {
			return // the blank line that ends the block
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue // fasthttp refuses such a line before here
		}
		// As fasthttp reads a field: white space around the name (only
		// after it: a line starting with some is a fold) and around the
		// value is not part of either.
		w.addField(trimSpace(name), trimSpace(value))
	}
	w.raw, w.spans = w.raw[:rawLen], w.spans[:spansLen]
	req.Header.VisitAllInOrder(w.addField)
}

// addField appends one field's name and value to w.raw.
func (w *wire) addField(name, value []byte) {
	var f fieldSpan
	f.name[0] = len(w.raw)
	w.raw = append(w.raw, name...)
	f.name[1] = len(w.raw)
	w.raw = append(w.raw, value...)
	f.value = [2]int{f.name[1], len(w.raw)}
	w.spans = append(w.spans, f)
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
