// The response headers of an object (validators, system metadata,
// x-amz-meta-*, x-granary-persisted) and the response-* query overrides of
// GetObject.
package api

import (
	"strconv"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/granary-dev/granary/api/s3err"
	"github.com/granary-dev/granary/store"
)

// defaultContentType is what S3 answers for an object stored without one.
const defaultContentType = "binary/octet-stream"

// overrides maps each response-* query parameter to the header it sets.
var overrides = [...]struct{ param, header string }{
	{"response-content-type", "Content-Type"},
	{"response-content-language", "Content-Language"},
	{"response-expires", "Expires"},
	{"response-cache-control", "Cache-Control"},
	{"response-content-disposition", "Content-Disposition"},
	{"response-content-encoding", "Content-Encoding"},
}

// setValidators sets ETag (quoted) and Last-Modified.
func setValidators(h headerSink, info store.ObjectInfo) {
	var buf [96]byte
	b := append(buf[:0], '"')
	b = append(b, info.ETag...)
	b = append(b, '"')
	h.setBytes("ETag", b)
	h.setBytes("Last-Modified", fasthttp.AppendHTTPDate(buf[:0], info.LastModified))
}

// setObjectHeaders sets every header describing info, but Content-Length
// (fasthttp sets it from the body; HEAD sets it itself).
func setObjectHeaders(h headerSink, info store.ObjectInfo) {
	setValidators(h, info)
	h.set("Accept-Ranges", "bytes")
	ct := info.ContentType
	if ct == "" || !safeHeaderValue(ct) {
		ct = defaultContentType
	}
	h.set("Content-Type", ct)
	setIfSafe(h, "Content-Encoding", info.ContentEncoding)
	setIfSafe(h, "Content-Disposition", info.ContentDisposition)
	setIfSafe(h, "Content-Language", info.ContentLanguage)
	setIfSafe(h, "Cache-Control", info.CacheControl)
	setIfSafe(h, "Expires", info.Expires)
	if n := info.NumTags(); n > 0 {
		h.set("X-Amz-Tagging-Count", strconv.Itoa(n))
	}
	// User metadata names go out lower-case, as S3 and MinIO send them
	// (SDKs expose the names as sent); fasthttp would capitalise them.
	// An empty value is sent too: S3 keeps it.
	for k, v := range info.User {
		if safeHeaderValue(k) && safeHeaderValue(v) {
			h.setRaw("x-amz-meta-"+k, v)
		}
	}
}

// persistedHeader tells whether an object has reached the origin: "false"
// while a write-back upload of it still waits, "true" otherwise.
const persistedHeader = "X-Granary-Persisted"

// setPersisted sets persistedHeader for the addressed object.
func (s objects) setPersisted(h headerSink, r *request) {
	v := "true"
	if !s.engine.Persisted(r.bucket, r.key) {
		v = "false"
	}
	h.set(persistedHeader, v)
}

// setIfSafe sets a non-empty value that cannot break the header block
// (metadata comes from the origin, which another client may have written).
func setIfSafe(h headerSink, name, v string) {
	if v != "" && safeHeaderValue(v) {
		h.set(name, v)
	}
}

func safeHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c == '\r' || c == '\n' || c == 0 {
			return false
		}
	}
	return true
}

// checkOverrides rejects response-* values that cannot be sent as headers.
func checkOverrides(c *fiber.Ctx) error {
	args := c.Request().URI().QueryArgs()
	if args.Len() == 0 {
		return nil
	}
	for _, o := range overrides {
		if v := args.Peek(o.param); len(v) > 0 && !safeHeaderValue(string(v)) {
			return s3err.New(s3err.InvalidArgument, "invalid value for "+o.param)
		}
	}
	return nil
}

// setOverrides applies the response-* parameters checkOverrides accepted.
func setOverrides(c *fiber.Ctx) {
	args := c.Request().URI().QueryArgs()
	if args.Len() == 0 {
		return
	}
	h := &c.Response().Header
	for _, o := range overrides {
		if v := args.Peek(o.param); len(v) > 0 {
			h.SetBytesV(o.header, v)
		}
	}
}
