// Conditional requests: If-Match, If-None-Match, If-Modified-Since and
// If-Unmodified-Since (and their x-amz-copy-source-if-* twins), evaluated
// with S3's precedence on the object's info before any body byte is read.
package api

import (
	"bytes"
	"net/http"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/granary-dev/granary/api/s3err"
	"github.com/granary-dev/granary/store"
)

// errNotModified answers a conditional GET or HEAD whose object did not
// change (304, no body).
var errNotModified = s3err.New(s3err.NotModified, "")

// conditionHeaders names the four headers of one family.
type conditionHeaders struct {
	ifMatch, ifNoneMatch, ifModifiedSince, ifUnmodifiedSince string
}

var (
	getConditions = conditionHeaders{
		"If-Match", "If-None-Match", "If-Modified-Since", "If-Unmodified-Since",
	}
	copyConditions = conditionHeaders{
		"X-Amz-Copy-Source-If-Match", "X-Amz-Copy-Source-If-None-Match",
		"X-Amz-Copy-Source-If-Modified-Since", "X-Amz-Copy-Source-If-Unmodified-Since",
	}
)

// conditions are the parsed headers. A date that does not parse is
// ignored, as HTTP says.
type conditions struct {
	ifMatch, ifNoneMatch       []byte // copies; nil when absent
	modifiedSince              time.Time
	unmodifiedSince            time.Time
	hasModified, hasUnmodified bool
}

// parseConditions reads one family of headers; ok is false when none is
// present (the common case, which costs four lookups).
func parseConditions(h *fasthttp.RequestHeader, names conditionHeaders) (conditions, bool) {
	return conditionsOf(h.Peek(names.ifMatch), h.Peek(names.ifNoneMatch),
		h.Peek(names.ifModifiedSince), h.Peek(names.ifUnmodifiedSince))
}

// conditionsOf parses the four headers' values (nil or empty: absent); ok
// is false when none is present.
func conditionsOf(ifMatch, ifNoneMatch, modifiedSince, unmodifiedSince []byte) (cond conditions, ok bool) {
	if len(ifMatch) > 0 {
		cond.ifMatch, ok = bytes.Clone(ifMatch), true
	}
	if len(ifNoneMatch) > 0 {
		cond.ifNoneMatch, ok = bytes.Clone(ifNoneMatch), true
	}
	if len(modifiedSince) > 0 {
		if t, err := http.ParseTime(string(modifiedSince)); err == nil {
			cond.modifiedSince, cond.hasModified, ok = t, true, true
		}
	}
	if len(unmodifiedSince) > 0 {
		if t, err := http.ParseTime(string(unmodifiedSince)); err == nil {
			cond.unmodifiedSince, cond.hasUnmodified, ok = t, true, true
		}
	}
	return cond, ok
}

// check evaluates the conditions on info: nil, errNotModified (304) or
// PreconditionFailed (412). The precondition checks come first; a true
// If-Match overrides a false If-Unmodified-Since, and a false If-None-Match
// (the ETag matches: 304) overrides If-Modified-Since.
func (cond *conditions) check(info store.ObjectInfo) error {
	modified := info.LastModified.Truncate(time.Second)
	if cond.ifMatch != nil {
		if !etagListMatches(cond.ifMatch, info.ETag) {
			return s3err.New(s3err.PreconditionFailed, "")
		}
	} else if cond.hasUnmodified && modified.After(cond.unmodifiedSince) {
		return s3err.New(s3err.PreconditionFailed, "")
	}
	if cond.ifNoneMatch != nil {
		if etagListMatches(cond.ifNoneMatch, info.ETag) {
			return errNotModified
		}
	} else if cond.hasModified && !modified.After(cond.modifiedSince) {
		return errNotModified
	}
	return nil
}

// etagListMatches reports whether the header value list ("*", or
// comma-separated, optionally quoted or weak ETags) names etag.
func etagListMatches(list []byte, etag string) bool {
	for len(list) > 0 {
		var item []byte
		if i := bytes.IndexByte(list, ','); i >= 0 {
			item, list = list[:i], list[i+1:]
		} else {
			item, list = list, nil
		}
		item = trimSpace(item)
		if string(item) == "*" {
			return true
		}
		item = bytes.TrimPrefix(item, []byte("W/"))
		if len(item) >= 2 && item[0] == '"' && item[len(item)-1] == '"' {
			item = item[1 : len(item)-1]
		}
		if string(item) == etag {
			return true
		}
	}
	return false
}
