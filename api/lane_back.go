// The way back to the GET lane: a connection the lane handed to fasthttp
// for a listing (or a bucket's head, its location) comes back to it
// once fasthttp has sent that answer, so that the reads a client sends
// after listing are the lane's again. Without it, every pooled
// connection of a client that lists before it reads (boto3 listing a
// prefix, the FUSE sidecar's readdir, fsspec) stays with fasthttp for
// good.
package api

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// leadsToReads reports whether a request of op is followed, as a rule,
// by GETs of objects: after it, its connection goes back to the lane.
// Not a GET or HEAD of an object fasthttp answered: the lane handed that
// one off and would hand off each like it (a query it does not take, a
// field it does not know), a round trip per read. Not a write either: writes come in runs
// (a checkpoint's parts), and a round trip each costs more than the
// lane saves a restore's large reads.
func (o op) leadsToReads() bool {
	switch o {
	case opListBuckets, opListObjects, opListObjectsV2, opListObjectVersions,
		opHeadBucket, opGetBucketLocation:
		return true
	}
	return false
}

// handBack has fasthttp give c's connection back to the lane once it has
// answered r, if r leads to reads and the connection is one the lane
// can serve (plain TCP, kept alive, the lane not shutting down).
func (s *Server) handBack(c *fiber.Ctx, r *request) {
	l := s.lane.Load()
	if l == nil || !r.op.leadsToReads() || l.stopping.Load() {
		return
	}
	ctx := c.Context()
	tc, ok := ctx.Conn().(*trackedConn)
	if !ok || ctx.Response.ConnectionClose() {
		return
	}
	if _, plain := tc.Conn.(syscall.Conn); !plain { // TLS: never the lane's
		return
	}
	tc.released = make(chan struct{})
	ctx.Hijack(l.takeBack) // fasthttp calls it once the answer is sent
}

// fasthttpReleased is fasthttp's ConnState hook: it closes a hijacked
// connection's released once fasthttp's serve of it has returned.
// fasthttp keys its idle connections by net.Conn and drops that serve's
// key as it returns, which runs on, unordered, after the hijack handler
// has started. A connection it got again before that would lose the new
// serve's key: Shutdown, which closes only the idle connections it
// holds, would wait on it out to its deadline.
func fasthttpReleased(c net.Conn, st fasthttp.ConnState) {
	if st != fasthttp.StateHijacked {
		return
	}
	if tc, ok := c.(*trackedConn); ok && tc.released != nil {
		close(tc.released)
	}
}

// takeBack is the hijack handler of handBack: hc is fasthttp's hold of
// the connection, whose reads yield first what fasthttp had read of it
// and not parsed. The connection is served by the lane on a goroutine
// of its own, so that fasthttp's context goes back to its pool now.
func (l *lane) takeBack(hc net.Conn) {
	u, ok := hc.(interface{ UnsafeConn() net.Conn })
	if !ok {
		hc.Close()
		return
	}
	tc, ok := u.UnsafeConn().(*trackedConn)
	if !ok { // cannot happen: handBack hijacks only these
		hc.Close()
		return
	}
	pre, err := readBuffered(hc, tc)
	switch {
	case err != nil:
		tc.Close()
		return
	case len(pre) >= headerBufferSize: // no head ends in it: fasthttp's
		tc.pre = pre
		l.handOff(tc)
		return
	}
	// served > 0: the next request's head is timed from its first byte,
	// the wait for it by the idle timeout.
	lc := &laneConn{l: l, c: tc, served: 1}
	if !l.adopt(lc) {
		tc.Close()
		return
	}
	go l.serve(lc, pre)
}

// longAgo is a deadline long passed: a read under it that would wait
// for the socket fails at once.
var longAgo = time.Unix(1, 0)

// readBuffered returns what hc yields without reading the socket: the
// bytes fasthttp read ahead (a request sent before the last answer
// arrived) and any the lane had left it. It leaves no read deadline set:
// whoever reads next sets its own (laneConn.wait; fasthttp's ReadTimeout).
func readBuffered(hc net.Conn, tc *trackedConn) ([]byte, error) {
	if err := tc.SetReadDeadline(longAgo); err != nil {
		return nil, err
	}
	defer tc.SetReadDeadline(time.Time{}) //nolint:errcheck // the next read's deadline decides
	bp := laneBufs.Get().(*[]byte)
	defer laneBufs.Put(bp)
	buf, n := *bp, 0
	for n < len(buf) {
		m, err := hc.Read(buf[n:])
		n += m
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			return bytes.Clone(buf[:n]), nil // empty if nothing was read ahead
		case err != nil:
			return nil, err
		}
	}
	// A buffer full: more than a head, and maybe more to come.
	rest, err := io.ReadAll(hc)
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		return nil, err
	}
	return append(bytes.Clone(buf), rest...), nil
}
