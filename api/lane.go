// The GET lane: the node's own front end for the request it answers most,
// a GetObject (and HeadObject). Every plain-TCP connection starts here. A
// request the lane takes (takes, lane_get.go) is answered by the same S3
// code as fiber's path, without fasthttp's and fiber's work per request;
// at the first request it does not take, the connection and the bytes
// read of it go to fasthttp, which serves it as it serves any other
// until a listing hands it back (lane_back.go). A warm 4 KiB GET costs
// the node 11-12 µs of user time here against 14 through fasthttp
// (README, "The GET lane").
//
// Its connections keep fasthttp's bounds: ReadHeaderTimeout for a
// request's line and headers (from the accept for the first request, from
// the first byte for the next), IdleTimeout between requests, IOTimeout
// while an answer is written. Shutdown closes the idle ones and waits for
// the busy ones to finish their answer.
package api

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// lane is the GET lane of one Serve: the connections it serves, and the
// listener fasthttp takes the rest from.
type lane struct {
	s  *Server
	ln net.Listener
	// out carries connections handed to fasthttp (laneListener.Accept).
	out  chan net.Conn
	done chan struct{} // closed once the listener is
	once sync.Once

	mu       sync.Mutex
	conns    map[*laneConn]struct{} // the connections it serves
	stopping atomic.Bool            // Shutdown began: no new request is taken
	wg       sync.WaitGroup         // one per connection the lane serves
}

// A connection's idle state (laneConn.idle): between requests it is
// idle, and the first of itself (a request's first byte) and Shutdown
// to move it on wins: busy, its request is answered; closing, it closes.
const (
	connBusy = iota
	connIdle
	connClosing
)

func newLane(s *Server, ln net.Listener) *lane {
	return &lane{s: s, ln: ln, out: make(chan net.Conn), done: make(chan struct{}),
		conns: map[*laneConn]struct{}{}}
}

// run accepts connections until the listener closes, serving each on a
// goroutine of its own. Errors other than a closed listener (too many
// open files) are waited out, as net/http's Server does.
func (l *lane) run() {
	var delay time.Duration
	for {
		c, err := l.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				l.close()
				return
			}
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			l.s.log.Warn().Err(err).Dur("retry_in", delay).Msg("accept failed")
			<-time.After(delay)
			continue
		}
		delay = 0
		tc, ok := c.(*trackedConn)
		if !ok { // cannot happen: the lane runs on a trackingListener
			l.handOff(c)
			continue
		}
		lc := &laneConn{l: l, c: tc, accepted: time.Now()}
		if !l.adopt(lc) {
			tc.Close()
			continue
		}
		go l.serve(lc, nil)
	}
}

// close closes the listener and ends the hand-offs; idempotent.
func (l *lane) close() error {
	var err error
	l.once.Do(func() {
		err = l.ln.Close()
		close(l.done)
	})
	return err
}

// adopt makes lc one of the connections the lane serves; false once
// Shutdown began (the connection is then the caller's to close). It
// looks at stopping under the lock Shutdown takes after setting it, so
// Shutdown either sees lc or is seen, and never waits before lc is
// counted.
func (l *lane) adopt(lc *laneConn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopping.Load() {
		return false
	}
	l.wg.Add(1)
	l.conns[lc] = struct{}{}
	return true
}

// serve answers lc's requests, pre (bytes read of it already) first,
// while the lane takes them, then hands the connection to fasthttp or
// closes it.
func (l *lane) serve(lc *laneConn, pre []byte) {
	defer l.wg.Done()
	defer func() {
		l.mu.Lock()
		delete(l.conns, lc)
		l.mu.Unlock()
	}()
	if lc.loop(pre) {
		l.handOff(lc.c)
		return
	}
	lc.c.Close()
}

// handOff gives c to fasthttp; once the listener is closed, fasthttp
// takes nothing more, and c is closed. A connection fasthttp handed back
// goes to it again only once its serve of it has ended (released).
func (l *lane) handOff(c net.Conn) {
	if tc, ok := c.(*trackedConn); ok && tc.released != nil {
		select {
		case <-tc.released:
			tc.released = nil
		case <-l.done:
			c.Close()
			return
		}
	}
	select {
	case l.out <- c:
	case <-l.done:
		c.Close()
	}
}

// waitIdle marks lc as waiting for a request; false once Shutdown began
// (the connection is to close). lc is idle before it looks at stopping,
// and Shutdown sets stopping before it looks at the connections, so one
// of the two sees the other (both may: a connection closes twice).
func (lc *laneConn) waitIdle() bool {
	lc.idle.Store(connIdle)
	return !lc.l.stopping.Load()
}

// busy marks lc as no longer waiting; false if Shutdown closed it first.
func (lc *laneConn) busy() bool {
	return lc.idle.CompareAndSwap(connIdle, connBusy) || lc.idle.Load() == connBusy
}

// shutdown closes the idle connections, has the busy ones close after
// their answer, and waits for all of them until ctx ends.
func (l *lane) shutdown(done <-chan struct{}) {
	l.stopping.Store(true)
	l.mu.Lock()
	for lc := range l.conns {
		if lc.idle.CompareAndSwap(connIdle, connClosing) {
			lc.c.Close()
		}
	}
	l.mu.Unlock()
	finished := make(chan struct{})
	go func() {
		l.wg.Wait()
		close(finished)
	}()
	select {
	case <-finished:
	case <-done:
	}
}

// laneListener is the listener fasthttp serves: it yields the
// connections the lane hands off.
type laneListener struct{ l *lane }

func (ll laneListener) Accept() (net.Conn, error) {
	select {
	case c := <-ll.l.out:
		return c, nil
	case <-ll.l.done:
		return nil, net.ErrClosed
	}
}

func (ll laneListener) Close() error   { return ll.l.close() }
func (ll laneListener) Addr() net.Addr { return ll.l.ln.Addr() }
