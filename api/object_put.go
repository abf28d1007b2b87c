// PutObject (PUT /bucket/key): size limits, system and user metadata, and a
// body that must be exactly as long as declared and pass
// every check before the origin may keep it.
package api

import (
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/granary-dev/granary/api/s3err"
	"github.com/granary-dev/granary/store"
)

// maxUserMeta is S3's limit on the x-amz-meta-* names and values together.
const maxUserMeta = 2 << 10

func (s objects) putObject(c *fiber.Ctx, r *request) error {
	body, err := exactBody(r, maxObjectSize)
	if err != nil {
		return err
	}
	meta, err := requestMeta(&c.Request().Header)
	if err != nil {
		return err
	}
	info, err := s.engine.Put(r.ctx, r.bucket, r.key, body, r.auth.ContentLength, meta)
	if err != nil {
		return bodyFailure(r, body, err)
	}
	setETag(c, info.ETag)
	c.Response().SetStatusCode(http.StatusOK)
	return nil
}

// exactBody checks the declared (decoded) size of r's body against limit
// and returns the reader that yields exactly that many bytes.
// Content-MD5 and x-amz-checksum-* are checked by the sigv4 body.
func exactBody(r *request, limit int64) (*exactReader, error) {
	size := r.auth.ContentLength
	if size < 0 {
		return nil, s3err.New(s3err.MissingContentLength, "")
	}
	if size > limit {
		return nil, s3err.New(s3err.EntityTooLarge, "")
	}
	body := &exactReader{r: r.auth.Body, left: size}
	if size == 0 {
		// An origin may store an empty object without reading its body;
		// read it first so its checks still run.
		if _, err := body.Read(nil); !errors.Is(err, io.EOF) {
			return nil, bodyFailure(r, body, err)
		}
	}
	return body, nil
}

func setETag(c *fiber.Ctx, etag string) {
	c.Response().Header.Set("ETag", `"`+etag+`"`)
}

// bodyFailure picks the error to answer a failed put with: the body's own
// failure (a check, a short body, a timeout) when there was one, since an
// origin may have wrapped it beyond recognition; else err.
func bodyFailure(r *request, body *exactReader, err error) error {
	if ferr := body.failure(); ferr != nil {
		return ferr
	}
	if ferr := r.body.failure(); ferr != nil {
		return ferr
	}
	return err
}

// requestMeta collects the object metadata a PUT, a REPLACE copy or a
// CreateMultipartUpload sets, with the tags of x-amz-tagging.
func requestMeta(h *fasthttp.RequestHeader) (store.ObjectMeta, error) {
	meta := store.ObjectMeta{
		ContentType:        string(h.ContentType()),
		ContentEncoding:    stripAWSChunked(string(h.Peek("Content-Encoding"))),
		ContentDisposition: string(h.Peek("Content-Disposition")),
		ContentLanguage:    string(h.Peek("Content-Language")),
		CacheControl:       string(h.Peek("Cache-Control")),
		Expires:            string(h.Peek("Expires")),
	}
	tags, err := parseTaggingHeader(string(h.Peek("X-Amz-Tagging")))
	if err != nil {
		return meta, err
	}
	meta.Tags = tags
	const prefix = "x-amz-meta-"
	total := 0
	h.VisitAll(func(k, v []byte) {
		if len(k) <= len(prefix) || !asciiEqualFold(k[:len(prefix)], prefix) {
			return
		}
		name := strings.ToLower(string(k[len(prefix):]))
		if meta.User == nil {
			meta.User = make(map[string]string)
		}
		if old, ok := meta.User[name]; ok { // repeated header: S3 joins them
			meta.User[name] = old + "," + string(v)
		} else {
			meta.User[name] = string(v)
		}
		total += len(name) + len(v)
	})
	if total > maxUserMeta {
		return meta, s3err.New(s3err.MetadataTooLarge, "")
	}
	return meta, nil
}

// stripAWSChunked removes the aws-chunked coding, which describes the
// transfer, not the object.
func stripAWSChunked(enc string) string {
	if !strings.Contains(strings.ToLower(enc), "aws-chunked") {
		return enc
	}
	var kept []string
	for _, part := range strings.Split(enc, ",") {
		if p := strings.TrimSpace(part); p != "" && !strings.EqualFold(p, "aws-chunked") {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, ",")
}

// exactReader yields exactly the declared number of bytes. When the last
// one is read it reads the body on to its end, which must come at once:
// that is where the body's checks (signature, checksum, digest) report, and
// an origin that stops reading at the declared size would otherwise never
// see them fail. Its first error sticks.
type exactReader struct {
	r    io.Reader
	left int64
	err  error
}

func (e *exactReader) Read(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	if e.left == 0 {
		e.err = e.finish()
		return 0, e.err
	}
	if int64(len(p)) > e.left {
		p = p[:e.left]
	}
	n, err := e.r.Read(p)
	e.left -= int64(n)
	switch {
	case errors.Is(err, io.EOF):
		if e.left > 0 {
			e.err = store.ErrIncompleteBody
		} else {
			e.err = io.EOF
		}
		return n, e.err
	case err != nil:
		e.err = err
		return n, err
	case e.left == 0:
		if e.err = e.finish(); !errors.Is(e.err, io.EOF) {
			return 0, e.err
		}
		return n, io.EOF
	}
	return n, nil
}

// finish reads past the declared end: io.EOF if the body ends there.
func (e *exactReader) finish() error {
	var one [1]byte
	for range 100 {
		n, err := e.r.Read(one[:])
		if n > 0 {
			return s3err.New(s3err.InvalidRequest, "the body is longer than its declared length")
		}
		if err != nil {
			return err
		}
	}
	return io.ErrNoProgress
}

// failure is the error the body failed with, nil if none (or not yet).
func (e *exactReader) failure() error {
	if e.err == nil || errors.Is(e.err, io.EOF) {
		return nil
	}
	return e.err
}
