// Where a response's headers are written: fasthttp's response header for
// requests fiber serves, or the GET lane's head, written as it goes out.
// The code that decides an object's headers (object_headers.go) writes
// through headerSink, so both paths send the same headers.
package api

import (
	"strconv"

	"github.com/valyala/fasthttp"
)

// headerSink takes response headers. set writes a header as fasthttp's
// Set does; setRaw writes its name as given (fasthttp would normalize it).
type headerSink interface {
	set(name, value string)
	setBytes(name string, value []byte)
	setRaw(name, value string)
}

// fastHeader is fasthttp's response header as a headerSink.
type fastHeader fasthttp.ResponseHeader

// sinkOf is h as a headerSink.
func sinkOf(h *fasthttp.ResponseHeader) *fastHeader { return (*fastHeader)(h) }

func (h *fastHeader) set(name, v string) { (*fasthttp.ResponseHeader)(h).Set(name, v) }

func (h *fastHeader) setBytes(name string, v []byte) {
	(*fasthttp.ResponseHeader)(h).SetBytesV(name, v)
}

func (h *fastHeader) setRaw(name, v string) {
	fh := (*fasthttp.ResponseHeader)(h)
	fh.DisableNormalizing()
	fh.Set(name, v)
	fh.EnableNormalizing()
}

// laneHead is the head of an answer with a body the GET lane sends (200
// or 206), written line by line: the status line and each header in the
// order set, then the blank line (end).
type laneHead struct {
	b      []byte
	status int
}

// start begins the head of an answer of status, with the Server header
// (if server names one) and Date, as fasthttp writes them.
func (h *laneHead) start(status int, server string, date []byte) {
	h.status = status
	h.b = append(h.b[:0], "HTTP/1.1 "...)
	h.b = strconv.AppendInt(h.b, int64(status), 10)
	h.b = append(append(append(h.b, ' '), fasthttp.StatusMessage(status)...), "\r\n"...)
	if server != "" {
		h.set("Server", server)
	}
	h.setBytes("Date", date)
}

func (h *laneHead) set(name, v string) {
	h.b = append(append(append(append(h.b, name...), ": "...), v...), "\r\n"...)
}

func (h *laneHead) setBytes(name string, v []byte) {
	h.b = append(append(append(append(h.b, name...), ": "...), v...), "\r\n"...)
}

func (h *laneHead) setRaw(name, v string) { h.set(name, v) }

// end writes Content-Length and the blank line that ends the head.
func (h *laneHead) end(length int64) []byte {
	h.b = append(h.b, "Content-Length: "...)
	h.b = strconv.AppendInt(h.b, length, 10)
	h.b = append(h.b, "\r\n\r\n"...)
	return h.b
}
