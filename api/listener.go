// A listener that remembers which connections never carried a byte, so a
// graceful shutdown can end them at once. fasthttp counts a fresh
// connection as busy while it waits for its first request, so a client's
// spare, never-used connection would otherwise hold Shutdown until the
// read timeout.
package api

import (
	"crypto/tls"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// trackingListener records its open connections.
type trackingListener struct {
	net.Listener
	mu    sync.Mutex // guards conns
	conns map[*trackedConn]struct{}
}

func newTrackingListener(ln net.Listener) *trackingListener {
	return &trackingListener{Listener: ln, conns: make(map[*trackedConn]struct{})}
}

func (l *trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: c, l: l}
	l.mu.Lock()
	l.conns[tc] = struct{}{}
	l.mu.Unlock()
	return tc, nil
}

// expireUnused ends the wait of every connection that has not read a byte
// yet by moving its read deadline to now: fasthttp's read fails and it
// closes the connection itself. (Closing it from here would race with a
// request arriving at that instant, and fasthttp panics when a connection
// it is about to answer on was closed under it; a deadline cannot hurt a
// request already read.) fasthttp may set its own deadline just after, so
// a shutdown calls this repeatedly.
func (l *trackingListener) expireUnused() {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	for c := range l.conns {
		if !c.used.Load() {
			_ = c.Conn.SetReadDeadline(now)
		}
	}
}

// trackedConn is a connection of a trackingListener.
type trackedConn struct {
	net.Conn
	l      *trackingListener
	used   atomic.Bool // some byte was read
	linger atomic.Bool // a request body was left unread: close gently
	silent atomic.Bool // nothing more is to be sent: writes are dropped
	closed sync.Once
}

// Write sends p, unless the connection was silenced.
func (c *trackedConn) Write(p []byte) (int, error) {
	if c.silent.Load() {
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// silenceIfUnused silences conn, if it is one of ours that never carried
// a byte of a request, and reports whether it did: a client's spare
// connection that times out (or is expired at shutdown) must be closed,
// not answered, or the client reads an error it never asked for.
func silenceIfUnused(conn net.Conn) bool {
	tc, ok := conn.(*trackedConn)
	if !ok || tc.used.Load() {
		return false
	}
	tc.silent.Store(true)
	return true
}

// connState is the TLS state of conn as fasthttp hands it to a handler
// (one of ours, around a *tls.Conn when serving HTTPS; its handshake is
// done once a request was read from it), nil for plain HTTP. fasthttp's
// own IsTLS and TLSConnectionState do not see through our wrapper.
func connState(conn net.Conn) *tls.ConnectionState {
	if tc, ok := conn.(*trackedConn); ok {
		conn = tc.Conn
	}
	tlsConn, ok := conn.(*tls.Conn)
	if !ok {
		return nil
	}
	st := tlsConn.ConnectionState()
	return &st
}

// Lingering close: a connection closed with request bytes still unread
// makes the kernel send a reset, which can reach the client before it has
// read the response (a 503 SlowDown, a 403) sent ahead of its body. So such
// a connection first half-closes, then reads and drops what still arrives
// for up to lingerTime (and lingerBytes), then closes: the client sees the
// response and an orderly end.
const (
	lingerTime  = time.Second
	lingerBytes = 64 << 20
)

// lingerOnClose asks for a lingering close of conn, if it is one of ours.
func lingerOnClose(conn net.Conn) {
	if tc, ok := conn.(*trackedConn); ok {
		tc.linger.Store(true)
	}
}

func (c *trackedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && !c.used.Load() {
		c.used.Store(true)
	}
	return n, err
}

func (c *trackedConn) Close() error {
	first := false
	c.closed.Do(func() {
		first = true
		c.l.mu.Lock()
		delete(c.l.conns, c)
		c.l.mu.Unlock()
	})
	tcp, ok := c.Conn.(*net.TCPConn)
	if !first || !c.linger.Load() || !ok || tcp.CloseWrite() != nil {
		return c.Conn.Close()
	}
	go func() {
		_ = tcp.SetReadDeadline(time.Now().Add(lingerTime))
		_, _ = io.CopyN(io.Discard, tcp, lingerBytes)
		tcp.Close()
	}()
	return nil
}
