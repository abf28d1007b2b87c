// A listener that remembers its open connections: which never carried a
// byte, so a graceful shutdown can end them at once (fasthttp counts a
// fresh connection as busy while it waits for its first request, so a
// client's spare, never-used connection would otherwise hold Shutdown
// until the header timeout), and how many each client address holds, so
// one address cannot take every descriptor the process has.
package api

import (
	"crypto/tls"
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/granary-dev/granary/internal/membody"
)

// trackingListener records its open connections and refuses a client
// address more than maxPerIP of them at once.
type trackingListener struct {
	net.Listener
	maxPerIP int    // open connections allowed per client address; 0: no limit
	refused  func() // called once per connection refused by maxPerIP; may be nil
	mu       sync.Mutex
	// conns and perIP are guarded by mu. perIP counts the members of conns
	// by address and holds no zero entry, so it never grows past the
	// addresses that hold connections now.
	conns map[*trackedConn]struct{}
	perIP map[netip.Addr]int
}

func newTrackingListener(ln net.Listener, maxPerIP int, refused func()) *trackingListener {
	return &trackingListener{Listener: ln, maxPerIP: maxPerIP, refused: refused,
		conns: make(map[*trackedConn]struct{}), perIP: make(map[netip.Addr]int)}
}

// Accept returns the next connection whose address is under its limit.
// One over it is closed at once, before a byte is read, and Accept waits
// for the next: refusing the newcomer is what nginx's limit_conn and
// HAProxy's per-source limits do. Closing the address's oldest idle
// connection instead would race a request the client may be sending on
// it that very moment (it would see a reset after sending, not knowing
// whether a PUT or DELETE took effect), while a refused connection fails
// before any request was sent, so every client retries it safely; and an
// address that floods only starves itself.
func (l *trackingListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if tc := l.admit(c); tc != nil {
			return tc, nil
		}
		c.Close()
		if l.refused != nil {
			l.refused()
		}
	}
}

// admit records c and returns it tracked, or returns nil if its address
// already holds maxPerIP connections. An address that is not IP (a unix
// socket) is not limited.
func (l *trackingListener) admit(c net.Conn) *trackedConn {
	tc := &trackedConn{Conn: c, l: l, ip: remoteIP(c)}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.maxPerIP > 0 && tc.ip.IsValid() && l.perIP[tc.ip] >= l.maxPerIP {
		return nil
	}
	l.conns[tc] = struct{}{}
	if tc.ip.IsValid() {
		l.perIP[tc.ip]++
	}
	return tc
}

// forget drops tc from the records; it runs once per admitted connection.
func (l *trackingListener) forget(tc *trackedConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.conns, tc)
	if !tc.ip.IsValid() {
		return
	}
	if n := l.perIP[tc.ip] - 1; n > 0 {
		l.perIP[tc.ip] = n
	} else {
		delete(l.perIP, tc.ip)
	}
}

// remoteIP is c's client address (an IPv4 one in IPv6 form unmapped, so
// both forms count as one), or the zero Addr if c is not over IP.
func remoteIP(c net.Conn) netip.Addr {
	if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return ta.AddrPort().Addr().Unmap().WithZone("")
	}
	return netip.Addr{}
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
	ip     netip.Addr  // the client's address; zero if not over IP
	used   atomic.Bool // some byte was read
	linger atomic.Bool // a request body was left unread: close gently
	silent atomic.Bool // nothing more is to be sent: writes are dropped
	closed sync.Once
	// hold, held and bufs belong to the goroutine serving the connection:
	// after Hold, Writes (a response's head) are kept in held and leave
	// with the body in WriteBuffers' writev (membody.Conn).
	hold bool
	held []byte
	// pre is what the GET lane read of the connection before it handed
	// it to fasthttp: Read returns it first.
	pre []byte
	// released is set by handBack before fasthttp gives the connection
	// back to the lane, and closed (fasthttpReleased) once fasthttp's
	// serve of it has ended; the lane hands it to fasthttp again only
	// after that (lane.handOff).
	released chan struct{}
	send     fileSends // SendFile's (sendfile_linux.go)
	bufs     [8][]byte
	all      net.Buffers // WriteBuffers' vector, kept so a writev allocates nothing
}

// Write sends p, unless the connection was silenced; after Hold, it
// keeps p for the next WriteBuffers.
func (c *trackedConn) Write(p []byte) (int, error) {
	if c.silent.Load() {
		return len(p), nil
	}
	if c.hold {
		c.held = append(c.held, p...)
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// Hold keeps the next Writes for the next WriteBuffers or Release.
func (c *trackedConn) Hold() { c.hold = true }

// Held reports whether a Hold keeps written bytes now.
func (c *trackedConn) Held() bool { return c.hold && len(c.held) > 0 }

// Release sends what Hold kept, if anything, and ends the hold.
func (c *trackedConn) Release() error {
	if !c.hold {
		return nil
	}
	head := c.held
	c.hold, c.held = false, c.held[:0]
	if len(head) == 0 || c.silent.Load() {
		return nil
	}
	_, err := c.Conn.Write(head)
	return err
}

// WriteBuffers sends what Hold kept and then v, with one writev where
// the connection has it (a warm body, a member's framed chunk answer),
// unless the connection was silenced. It returns the bytes of v written.
func (c *trackedConn) WriteBuffers(v *net.Buffers) (int64, error) {
	head := c.held
	c.hold, c.held = false, c.held[:0]
	if c.silent.Load() {
		var n int64
		for _, b := range *v {
			n += int64(len(b))
		}
		*v = nil
		return n, nil
	}
	if len(head) == 0 {
		return v.WriteTo(c.Conn)
	}
	c.all = append(append(net.Buffers(c.bufs[:0]), head), *v...)
	n, err := c.all.WriteTo(c.Conn)
	c.all = nil
	clear(c.bufs[:]) // no body outlives its answer here
	*v = nil
	return max(n-int64(len(head)), 0), err
}

var (
	_ membody.Conn       = (*trackedConn)(nil)
	_ membody.FileSender = (*trackedConn)(nil)
)

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
// (one of ours, around a tlsConn when serving HTTPS; its handshake is
// done once a request was read from it), nil for plain HTTP. fasthttp's
// own IsTLS and TLSConnectionState do not see through our wrapper.
func connState(conn net.Conn) *tls.ConnectionState {
	if tc, ok := conn.(*trackedConn); ok {
		conn = tc.Conn
	}
	tc, ok := conn.(*tlsConn)
	if !ok {
		return nil
	}
	st := tc.ConnectionState()
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
	if len(c.pre) > 0 { // what the GET lane read before it handed c off
		n := copy(p, c.pre)
		c.pre = c.pre[n:]
		return n, nil
	}
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
		c.l.forget(c)
	})
	if !first || !c.linger.Load() {
		return c.Conn.Close()
	}
	return closeGently(c.Conn)
}

// closeGently is the lingering close of conn: its sending side ends in
// order (for TLS, a close_notify alert ahead of the socket's FIN), then
// what the client still sends is read and dropped for up to lingerTime
// and lingerBytes, in the background, before the socket closes. A
// connection that cannot end its sending side so is closed at once.
func closeGently(conn net.Conn) error {
	var tcp *net.TCPConn
	switch cc := conn.(type) {
	case *net.TCPConn:
		tcp = cc
	case *tlsConn:
		tcp = cc.endWrite()
	}
	if tcp == nil || tcp.CloseWrite() != nil {
		return conn.Close()
	}
	go func() {
		_ = tcp.SetReadDeadline(time.Now().Add(lingerTime))
		_, _ = io.CopyN(io.Discard, tcp, lingerBytes)
		tcp.Close()
	}()
	return nil
}
