// HTTPS connections whose large writes leave in few system calls. Go's
// crypto/tls sends every record (at most 16 KiB of data) with its own
// write to the socket: a 1 MiB body is 64 writes, 64 trips through the
// TCP stack, 64 wake-ups of the reader. A tlsConn gathers the records of
// one large Write into a buffer and sends them together. A connection
// that opens with plain HTTP instead of a TLS handshake is answered 400,
// in plain HTTP, saying to use HTTPS.
package api

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Record batching bounds. A Write of at most one record's worth of data
// is passed through as crypto/tls makes it (one record, one write); a
// larger one is encrypted into a pooled buffer of batchSize, flushed when
// full and when the Write ends, so no byte waits past its own Write.
// batchSize holds a whole small-object response (responseBufferSize of
// headers and body) with its records' overhead, so it leaves in one write.
const (
	maxRecordData = 16 << 10
	batchSize     = 256 << 10
)

var batchPool = sync.Pool{New: func() any {
	b := make([]byte, 0, batchSize)
	return &b
}}

// tlsListener serves TLS on the connections of a listener.
type tlsListener struct {
	net.Listener
	config *tls.Config
}

func newTLSListener(ln net.Listener, config *tls.Config) net.Listener {
	return &tlsListener{Listener: ln, config: config}
}

// Accept returns the next connection, as a tlsConn; its handshake runs at
// its first read, as with tls.NewListener.
func (l *tlsListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	raw := &batchingConn{Conn: c}
	return &tlsConn{Conn: tls.Server(raw, l.config), raw: raw}, nil
}

// tlsConn is a server-side TLS connection that batches the records of a
// large Write.
type tlsConn struct {
	*tls.Conn
	raw *batchingConn
}

// endWrite ends the sending side of a TLS session in order, with a
// close_notify alert (crypto/tls bounds its write by a deadline), and
// returns the socket under it, for closeGently to half-close and drain;
// nil if the session cannot end so (its handshake never completed, the
// socket is not TCP). A client that was refused ahead of the request
// body it is still sending then reads the answer and an orderly end,
// where a reset would reach its TLS stack as a broken connection.
func (c *tlsConn) endWrite() *net.TCPConn {
	tcp, ok := c.raw.Conn.(*net.TCPConn)
	if !ok || c.Conn.CloseWrite() != nil {
		return nil
	}
	return tcp
}

// Close closes the session (crypto/tls sends its close_notify first); a
// connection answered as plain HTTP closes gently instead, so the client
// reads the 400 before any reset.
func (c *tlsConn) Close() error {
	if c.raw.plain.Load() {
		return closeGently(c.raw.Conn)
	}
	return c.Conn.Close()
}

// Write sends p as crypto/tls would, in fewer socket writes. The handshake
// is completed first, outside any batch: its flights must reach the
// client while the server waits for the answers.
func (c *tlsConn) Write(p []byte) (int, error) {
	if len(p) <= maxRecordData {
		return c.Conn.Write(p)
	}
	if err := c.Conn.Handshake(); err != nil {
		return 0, err
	}
	c.raw.begin()
	n, err := c.Conn.Write(p)
	if ferr := c.raw.end(); err == nil {
		err = ferr
	}
	return n, err
}

// batchingConn is the socket under a tlsConn. Between begin and end its
// writes are gathered; at other times (handshake, alerts, a key update
// answered while reading) they go straight through.
type batchingConn struct {
	net.Conn
	mu  sync.Mutex // guards buf and err
	buf *[]byte    // non-nil between begin and end
	err error      // the first failed flush of this batch
	// read is set by the first Read (used by the reading side only:
	// crypto/tls serialises reads), plain when that Read found plain
	// HTTP and answered it (read by Close, which a shutdown may call from
	// another goroutine). The first read runs under the deadline fasthttp
	// sets for a request's headers, so it is bounded.
	read  bool
	plain atomic.Bool
}

// plainHTTPAnswer is the answer to plain HTTP sent to the HTTPS port, as
// nginx gives it.
var plainHTTPAnswer = func() []byte {
	body := "400 The plain HTTP request was sent to HTTPS port: use https:// to reach this server.\n"
	return []byte(fmt.Sprintf("HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n"+
		"Content-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body))
}()

// plainAnswerTimeout bounds the write of plainHTTPAnswer.
const plainAnswerTimeout = 5 * time.Second

// Read reads from the socket. The first Read, the start of the client's
// handshake, is looked at: a TLS record starts with a content type byte
// (0x16 for a ClientHello), an HTTP request with a method's capital
// letter. Plain HTTP is answered plainHTTPAnswer and its bytes end in
// io.EOF, which crypto/tls takes for a handshake that never started and
// fasthttp for a client gone before its first request: the connection
// closes without another byte (closing gently: see tlsConn.Close).
func (c *batchingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if c.read || n == 0 {
		return n, err
	}
	c.read = true
	if p[0] < 'A' || p[0] > 'Z' {
		return n, err
	}
	c.plain.Store(true)
	_ = c.Conn.SetWriteDeadline(time.Now().Add(plainAnswerTimeout))
	_, _ = c.Conn.Write(plainHTTPAnswer)
	return 0, io.EOF
}

func (c *batchingConn) begin() {
	c.mu.Lock()
	c.buf, c.err = batchPool.Get().(*[]byte), nil
	c.mu.Unlock()
}

// end sends what is gathered, returns the buffer to the pool, and reports
// the batch's first write error.
func (c *batchingConn) end() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.flushLocked()
	*c.buf = (*c.buf)[:0]
	batchPool.Put(c.buf)
	c.buf = nil
	return c.err
}

func (c *batchingConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.buf == nil {
		return c.Conn.Write(p)
	}
	if c.err != nil {
		return 0, c.err
	}
	if len(*c.buf)+len(p) > cap(*c.buf) {
		c.flushLocked()
		if c.err != nil {
			return 0, c.err
		}
	}
	if len(p) > cap(*c.buf) {
		return c.Conn.Write(p)
	}
	*c.buf = append(*c.buf, p...)
	return len(p), nil
}

// flushLocked writes the gathered bytes; a failure is kept in err (the
// connection is broken: crypto/tls fails every later write too).
func (c *batchingConn) flushLocked() {
	if len(*c.buf) == 0 || c.err != nil {
		return
	}
	_, c.err = c.Conn.Write(*c.buf)
	*c.buf = (*c.buf)[:0]
}
