// The streamed body of a large GetObject. fasthttp writes it after the
// handler returned and closes it once written or once the client is gone;
// Close releases the engine's reader (which cancels its work) and reports
// the request with the bytes actually sent.
package api

import (
	"errors"
	"io"
	"net"
	"time"

	"github.com/granary-dev/granary/gateway"
	"github.com/granary-dev/granary/internal/membody"
)

// errClientGone marks a stream the client stopped taking.
var errClientGone = errors.New("api: client went away mid-response")

// objectStream is used by the connection's goroutine only: fasthttp calls
// WriteTo (or Read) and then Close, after the handler returned.
type objectStream struct {
	s       *core
	r       *request
	obj     *gateway.Object
	conn    net.Conn
	renewed time.Time
	sent    int64 // bytes taken from the engine
	err     error // the first failure, engine or client
	closed  bool
}

func newObjectStream(s *core, r *request, obj *gateway.Object, conn net.Conn) *objectStream {
	return &objectStream{s: s, r: r, obj: obj, conn: conn}
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

// WriteTo writes the body to w straight from the engine's memory,
// renewing the write deadline as it goes (a slow client is fine, a stalled
// one times out). Past w, when the connection holds this answer's head
// (membody.Stream): the first bytes leave with the head, in one writev,
// and the rest straight to the connection.
func (o *objectStream) WriteTo(w io.Writer) (int64, error) {
	if tc, ok := o.conn.(*trackedConn); ok {
		tc.widen(o.obj.Length)
	}
	if membody.Held(o.conn) {
		w = &headFirst{conn: o.conn}
	} else if err := membody.Release(o.conn); err != nil { // the head goes first
		return 0, err
	}
	dw := &deadlineWriter{w: w, o: o}
	n, err := o.obj.WriteTo(dw)
	o.sent += n
	switch {
	case dw.err != nil:
		if o.err == nil {
			o.err = errClientGone
		}
	case err != nil:
		o.noteReadErr(err)
	default:
		o.noteReadErr(io.EOF) // an early end is an error too
	}
	return n, err
}

// headFirst writes its first bytes with the head the connection holds,
// in one writev (membody.After), and the rest straight to the
// connection.
type headFirst struct {
	conn net.Conn
	sent bool
}

func (h *headFirst) Write(p []byte) (int, error) {
	if h.sent {
		return h.conn.Write(p)
	}
	h.sent = true
	v := net.Buffers{p}
	n, err := membody.After(h.conn, &v)
	return int(n), err
}

// WriteFile sends n bytes of the file fd from off, by reference, after
// the head if it is still held (gateway.FileWriter): a span under
// membody.FileMin costs less to write.
func (h *headFirst) WriteFile(fd uintptr, off int64, n int) (int64, error) {
	if n < membody.FileMin {
		return 0, errors.ErrUnsupported
	}
	sent, err := membody.SendFile(h.conn, fd, off, n)
	if !errors.Is(err, errors.ErrUnsupported) {
		h.sent = true
	}
	return sent, err
}

// deadlineWriter renews the connection's write deadline before each write
// and remembers a failed write (the client's side, not the engine's).
type deadlineWriter struct {
	w   io.Writer
	o   *objectStream
	err error
}

func (d *deadlineWriter) Write(p []byte) (int, error) {
	d.o.renewDeadline()
	n, err := d.w.Write(p)
	if err != nil {
		d.err = err
	}
	return n, err
}

// WriteFile is Write for a span that lies in a file, where the writer
// below can send it by reference (gateway.FileWriter).
func (d *deadlineWriter) WriteFile(fd uintptr, off int64, n int) (int64, error) {
	fw, ok := d.w.(gateway.FileWriter)
	if !ok {
		return 0, errors.ErrUnsupported
	}
	d.o.renewDeadline()
	sent, err := fw.WriteFile(fd, off, n)
	if err != nil && !errors.Is(err, errors.ErrUnsupported) {
		d.err = err
	}
	return sent, err
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
	if o.conn == nil || now.Sub(o.renewed) < renewGap(o.s.ioTimeout) {
		return
	}
	o.renewed = now
	_ = o.conn.SetWriteDeadline(now.Add(o.s.ioTimeout))
}

// Close releases the body, ends the connection's hold of the head (see
// membody.Stream) and reports the request. It is idempotent.
func (o *objectStream) Close() error {
	if o.closed {
		return nil
	}
	o.closed = true
	err := o.obj.Close()
	if rerr := membody.Release(o.conn); err == nil {
		err = rerr
	}
	if o.err == nil && o.sent < o.obj.Length {
		o.err = errClientGone // fasthttp stopped asking: the write failed
	}
	o.s.report(o.r, o.sent, o.err)
	return err
}
