// Package membody sets an in-memory response body on a fasthttp response
// so that it is written to the connection as it is, after the headers,
// rather than copied into the connection's response buffer first: a
// warm sample from RAM, or a chunk a member serves a peer from RAM.
package membody

import (
	"bufio"
	"bytes"
	"io"
	"net"

	"github.com/valyala/fasthttp"
)

// Direct is the size from which a body is written to the connection
// directly; a smaller one is cheaper to copy than to send apart.
const Direct = 32 << 10

// Set makes b resp's body, b never modified afterwards (the tiers' bytes
// are immutable); conn is the request's connection (fasthttp's
// RequestCtx.Conn()).
func Set(resp *fasthttp.Response, b []byte, conn net.Conn) {
	if len(b) < Direct {
		resp.SetBodyRaw(b)
		return
	}
	resp.SetBodyStream(New(b, conn), len(b))
}

// Body is an in-memory body that fasthttp writes after the headers: the
// headers are flushed and the body written to the connection as it is.
// (A copy of every warm sample into the buffer cost a sixth of a node's
// CPU.) fasthttp's Response.Body() reads it into a buffer, which undoes
// that: read a response's length from its Content-Length instead.
type Body struct {
	*bytes.Reader
	conn net.Conn
}

// New is a body of b for the connection conn (nil: an ordinary reader).
func New(b []byte, conn net.Conn) *Body {
	return &Body{Reader: bytes.NewReader(b), conn: conn}
}

// WriteTo writes the rest of the body to w, or past w straight to the
// connection when w is the connection's buffered writer.
func (m *Body) WriteTo(w io.Writer) (int64, error) {
	if bw, ok := w.(*bufio.Writer); ok && m.conn != nil {
		if err := bw.Flush(); err != nil {
			return 0, err
		}
		w = m.conn
	}
	return m.Reader.WriteTo(w)
}
