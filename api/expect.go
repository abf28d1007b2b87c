// A PUT that declares a body larger than any S3 PUT takes, sent with
// Expect: 100-continue, is refused EntityTooLarge without the client
// being told to send it. fasthttp answers 100 Continue itself before the
// handler runs (its ContinueHandler can only swap that for a bare 417),
// so the request is disguised, once its headers are read, as one with
// no body and no Expect, and restored before anything reads it.
package api

import (
	"bytes"
	"strconv"

	"github.com/valyala/fasthttp"

	"github.com/granary-dev/granary/store"
)

// maxPutBody is the largest body any PUT takes: an object (maxObjectSize)
// or a part (store.MaxPartSize), as its decoded length.
const maxPutBody = max(maxObjectSize, store.MaxPartSize)

// tooLargeMark is the request header that carries a disguised request's
// Content-Length from headerReceived to entry. Only markTooLarge sets it:
// it first deletes one a client sent.
const tooLargeMark = "X-Granary-Declared-Length"

// markTooLarge disguises h, if it is a PUT with Expect: 100-continue that
// declares more than maxPutBody, as a request without a body or Expect,
// so that fasthttp neither answers 100 Continue nor waits for body bytes.
func markTooLarge(h *fasthttp.RequestHeader) {
	h.Del(tooLargeMark)
	if !h.IsPut() || !bytes.EqualFold(h.Peek("Expect"), []byte("100-continue")) || declaredBody(h) <= maxPutBody {
		return
	}
	h.Set(tooLargeMark, strconv.Itoa(h.ContentLength()))
	h.Del("Expect")
	h.SetContentLength(0)
}

// restoreTooLarge undoes markTooLarge on h, so the signature and the
// handlers see the request as sent, and reports whether h was marked.
// The body is never read: the answer, EntityTooLarge, closes the
// connection (the body is left unread).
func restoreTooLarge(h *fasthttp.RequestHeader) bool {
	v := h.Peek(tooLargeMark)
	if len(v) == 0 {
		return false
	}
	n, err := strconv.Atoi(string(v))
	h.Del(tooLargeMark)
	if err == nil {
		h.SetContentLength(n)
	}
	h.Set("Expect", "100-continue")
	return true
}

// declaredBody is the body size h declares: its decoded length for an
// aws-chunked body, else its Content-Length (-1 when it has none).
func declaredBody(h *fasthttp.RequestHeader) int64 {
	if v := h.Peek("X-Amz-Decoded-Content-Length"); len(v) > 0 {
		if n, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			return n
		}
	}
	return int64(h.ContentLength())
}
