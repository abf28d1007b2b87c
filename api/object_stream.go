// The streamed body of a large GetObject. fasthttp writes it after the
// handler returned and closes it once written or once the client is gone;
// Close releases the engine's reader, cancels the request's context and
// reports the request with the bytes actually sent.
package api

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"github.com/granary-dev/granary/gateway"
)

// streamChunk is the size of the writes of a streamed body.
const streamChunk = 256 << 10

var streamBufs = sync.Pool{New: func() any { b := make([]byte, streamChunk); return &b }}

// errClientGone marks a stream the client stopped taking.
var errClientGone = errors.New("api: client went away mid-response")

// objectStream is used by the connection's goroutine only: fasthttp calls
// WriteTo (or Read) and then Close, after the handler returned.
type objectStream struct {
	s       *Server
	r       *request
	obj     *gateway.Object
	cancel  context.CancelFunc
	conn    net.Conn
	renewed time.Time
	sent    int64 // bytes taken from the engine
	err     error // the first failure, engine or client
	closed  bool
}

func newObjectStream(s *Server, r *request, obj *gateway.Object, cancel context.CancelFunc, conn net.Conn) *objectStream {
	return &objectStream{s: s, r: r, obj: obj, cancel: cancel, conn: conn}
}

// Read implements io.Reader; fasthttp prefers WriteTo.
func (o *objectStream) Read(p []byte) (int, error) {
	o.renewDeadline()
	n, err := o.obj.Read(p)
	o.sent += int64(n)
	if err != nil {
		o.noteReadErr(err)
	}
	return n, err
}

// WriteTo copies the body to w in large writes, renewing the write
// deadline as it goes (a slow client is fine, a stalled one times out).
func (o *objectStream) WriteTo(w io.Writer) (int64, error) {
	bp := streamBufs.Get().(*[]byte)
	defer streamBufs.Put(bp)
	buf := *bp
	var written int64
	for {
		n, rerr := o.obj.Read(buf)
		o.sent += int64(n)
		if n > 0 {
			o.renewDeadline()
			m, werr := w.Write(buf[:n])
			written += int64(m)
			if werr != nil {
				if o.err == nil {
					o.err = errClientGone
				}
				return written, werr
			}
		}
		if rerr != nil {
			o.noteReadErr(rerr)
			if errors.Is(rerr, io.EOF) {
				return written, nil
			}
			return written, rerr
		}
	}
}

// noteReadErr records an engine failure; an EOF before Length is one.
func (o *objectStream) noteReadErr(err error) {
	if o.err != nil {
		return
	}
	if !errors.Is(err, io.EOF) {
		o.err = err
	} else if o.sent < o.obj.Length {
		o.err = io.ErrUnexpectedEOF
	}
}

func (o *objectStream) renewDeadline() {
	now := time.Now()
	if o.conn == nil || now.Sub(o.renewed) < renewGap(o.s.opts.IOTimeout) {
		return
	}
	o.renewed = now
	_ = o.conn.SetWriteDeadline(now.Add(o.s.opts.IOTimeout))
}

// Close releases the body and reports the request. It is idempotent.
func (o *objectStream) Close() error {
	if o.closed {
		return nil
	}
	o.closed = true
	err := o.obj.Close()
	o.cancel()
	if o.err == nil && o.sent < o.obj.Length {
		o.err = errClientGone // fasthttp stopped asking: the write failed
	}
	o.s.report(o.r, o.sent, o.err)
	return err
}
