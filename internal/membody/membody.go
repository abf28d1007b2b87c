// Package membody sets an in-memory response body on a fasthttp response
// so that it is written to the connection as it is, after the headers,
// rather than copied into the connection's response buffer first: a
// warm sample from RAM, or a chunk a member serves a peer from RAM.
// Where the connection can (Conn), the headers and the body leave in one
// writev; where the body also lies in a file (Owner) and the connection
// can (FileSender), the kernel sends it from the file by reference.
package membody

import (
	"bytes"
	"errors"
	"io"
	"net"
	"sync/atomic"

	"github.com/valyala/fasthttp"
)

// Direct is the size from which a body is written to the connection
// directly; a smaller one is cheaper to copy than to send apart.
const Direct = 32 << 10

// BuffersWriter is a connection that writes several buffers at once
// (writev, as *net.TCPConn does through net.Buffers); a server's wrapper
// of its connections offers it so that bodies leave without copies.
type BuffersWriter interface {
	// WriteBuffers writes v and returns how many of v's bytes it wrote.
	WriteBuffers(v *net.Buffers) (int64, error)
}

// Conn is a connection that can send a response's head with its body.
// After Hold, Writes (the head fasthttp flushes before a streamed body:
// Stream asks it to) are kept until the next WriteBuffers, which sends
// them ahead of its own buffers in the same writev, or Release, which
// sends them alone. Either ends the hold. Held reports whether a Hold
// keeps written bytes now: fasthttp is writing that response's body.
type Conn interface {
	BuffersWriter
	Hold()
	Held() bool
	Release() error
}

// FileSender is a Conn that can send what it holds and then bytes of a
// file, by reference (sendfile). SendFile returns errors.ErrUnsupported,
// having sent nothing and ended no hold, where the connection cannot
// (TLS).
type FileSender interface {
	SendFile(fd uintptr, off int64, n int) (int64, error)
}

// Owner holds a body's bytes, which stay valid until it is closed; File
// says where they also lie in a file the kernel can send from, if they
// do.
type Owner interface {
	io.Closer
	File() (fd uintptr, off int64, ok bool)
}

// FileMin is the smallest body sent from its owner's file: a smaller one
// costs less to send with its head in one writev (ram.ArenaMin says why).
const FileMin = 64 << 10

// fileBytes counts the body bytes sent from files (FileBytes).
var fileBytes atomic.Int64

// FileBytes is how many body bytes this process sent from files, by
// reference, rather than copied out of its memory.
func FileBytes() int64 { return fileBytes.Load() }

// Set makes b resp's body, b never modified afterwards (the tiers' bytes
// are immutable); conn is the request's connection (fasthttp's
// RequestCtx.Conn()).
func Set(resp *fasthttp.Response, b []byte, conn net.Conn) {
	if len(b) < Direct {
		resp.SetBodyRaw(b)
		return
	}
	Stream(resp, New(b, conn), len(b), conn)
}

// SetOwned makes b, which o holds, resp's body like Set, and closes o
// once it is sent or dropped (at once for a body small enough to copy).
func SetOwned(resp *fasthttp.Response, b []byte, conn net.Conn, o Owner) {
	if len(b) < Direct {
		resp.SetBody(b) // copies: o lets the bytes go now
		o.Close()
		return
	}
	Stream(resp, Owned(b, conn, o), len(b), conn)
}

// Owned is a body of b, which o holds, for the connection conn; its
// Close closes o.
func Owned(b []byte, conn net.Conn, o Owner) *Body {
	body := New(b, conn)
	body.owner = o
	return body
}

// Stream makes body (size bytes) resp's body and has conn hold the
// response's head for it. body must end the hold: its WriteTo sends
// through After, its Close calls Release (fasthttp closes every body
// stream, written or not: a HEAD, a body replaced, a connection lost).
func Stream(resp *fasthttp.Response, body io.ReadCloser, size int, conn net.Conn) {
	resp.SetBodyStream(body, size) // closes the body it replaces first
	if c, ok := conn.(Conn); ok {
		resp.ImmediateHeaderFlush = true // the head reaches the hold before the body is asked for
		c.Hold()
	}
}

// Held reports whether conn is a Conn that holds a response's head now:
// the body being written goes to conn, and may go past the writer
// fasthttp hands it (whose buffer the head's flush emptied) with After.
func Held(conn net.Conn) bool {
	c, ok := conn.(Conn)
	return ok && c.Held()
}

// Release sends what conn holds, if it is a Conn, and ends the hold.
func Release(conn net.Conn) error {
	if c, ok := conn.(Conn); ok {
		return c.Release()
	}
	return nil
}

// Body is an in-memory body that fasthttp writes after the headers: the
// headers and the body go to the connection as they are. (A copy of
// every warm sample into the buffer cost a sixth of a node's CPU; a
// write of the headers apart, another wake-up of the client.)
// fasthttp's Response.Body() reads it into a buffer, which undoes that:
// read a response's length from its Content-Length instead.
type Body struct {
	bytes.Reader
	b     []byte
	conn  net.Conn
	owner Owner // nil: b is the garbage collector's to keep
	// one and v are WriteTo's vector: kept here, a GET allocates the
	// Body alone.
	one [1][]byte
	v   net.Buffers
}

// New is a body of b for the connection conn (nil: an ordinary reader).
func New(b []byte, conn net.Conn) *Body {
	m := &Body{b: b, conn: conn}
	m.Reset(b)
	return m
}

// WriteTo writes the rest of the body straight to the connection, with
// the head it holds, when the connection holds one (fasthttp is writing
// this response), else to w.
func (m *Body) WriteTo(w io.Writer) (int64, error) {
	if !Held(m.conn) {
		if err := Release(m.conn); err != nil { // the head goes first
			return 0, err
		}
		return m.Reader.WriteTo(w)
	}
	if n, err := m.sendFile(); !errors.Is(err, errors.ErrUnsupported) {
		return n, err
	}
	m.one[0] = m.b[len(m.b)-m.Len():]
	m.v = m.one[:]
	n, err := After(m.conn, &m.v)
	m.one[0] = nil
	m.Reader.Seek(n, io.SeekCurrent) //nolint:errcheck // n is at most what was left
	return n, err
}

// sendFile sends the rest of the body, with the head the connection
// holds, from the owner's file; errors.ErrUnsupported, having sent
// nothing, if the body is in no file or the connection cannot.
func (m *Body) sendFile() (int64, error) {
	fs, ok := m.conn.(FileSender)
	if !ok || m.owner == nil || m.Len() < FileMin {
		return 0, errors.ErrUnsupported
	}
	fd, off, ok := m.owner.File()
	if !ok {
		return 0, errors.ErrUnsupported
	}
	sent := int64(len(m.b) - m.Len())
	n, err := sendFile(fs, fd, off+sent, m.Len())
	m.Reader.Seek(n, io.SeekCurrent) //nolint:errcheck // n is at most what was left
	return n, err
}

// SendFile sends what conn holds (a response's head), then n bytes of
// the file fd from off, by reference: a body that lies in a file only.
// errors.ErrUnsupported, having sent nothing and ended no hold, where
// conn cannot (see FileSender).
func SendFile(conn net.Conn, fd uintptr, off int64, n int) (int64, error) {
	fs, ok := conn.(FileSender)
	if !ok {
		return 0, errors.ErrUnsupported
	}
	return sendFile(fs, fd, off, n)
}

// sendFile is fs.SendFile, its bytes counted (FileBytes).
func sendFile(fs FileSender, fd uintptr, off int64, n int) (int64, error) {
	sent, err := fs.SendFile(fd, off, n)
	fileBytes.Add(sent)
	return sent, err
}

// Close ends the connection's hold (see Stream) and lets the owner go.
func (m *Body) Close() error {
	err := Release(m.conn)
	if m.owner != nil {
		m.owner.Close()
		m.owner = nil
	}
	return err
}

// After sends what conn holds (a response's head), then v, to conn: in
// one writev where conn is a Conn. It returns how many of v's bytes were
// written.
func After(conn net.Conn, v *net.Buffers) (int64, error) {
	if c, ok := conn.(BuffersWriter); ok {
		return c.WriteBuffers(v)
	}
	return v.WriteTo(conn)
}
