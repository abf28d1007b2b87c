// A listener that remembers which connections never carried a byte, so a
// graceful shutdown can end them at once. fasthttp counts a fresh
// connection as busy while it waits for its first request, so a client's
// spare, never-used connection would otherwise hold Shutdown until the
// read timeout.
package api

import (
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
	closed sync.Once
}

func (c *trackedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && !c.used.Load() {
		c.used.Store(true)
	}
	return n, err
}

func (c *trackedConn) Close() error {
	c.closed.Do(func() {
		c.l.mu.Lock()
		delete(c.l.conns, c)
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}
