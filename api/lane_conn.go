// One connection of the GET lane: reading each request's head under
// fasthttp's bounds, answering those the lane takes, and handing the
// connection to fasthttp at the first it does not.
package api

import (
	"bytes"
	"errors"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/granary-dev/granary/api/s3err"
	"github.com/granary-dev/granary/api/sigv4"
)

// laneBufs holds the lane's read buffers: a request head is at most
// headerBufferSize, as fasthttp's is.
var laneBufs = sync.Pool{New: func() any { b := make([]byte, headerBufferSize); return &b }}

// laneConn is one connection the lane serves, used by its goroutine only.
// buf[:n] is what was read of it and not yet answered.
type laneConn struct {
	l        *lane
	c        *trackedConn
	accepted time.Time
	served   int          // requests answered
	idle     atomic.Int32 // connBusy, connIdle or connClosing
	handOff  bool         // step stopped at a request for fasthttp
	// When the buffered part of a head was first waited on; zero if none.
	headFrom time.Time
	// The read and write deadlines last set (due).
	readBy, writeBy time.Time
	buf             []byte
	n               int
	// Working memory kept across requests.
	method    string       // the taken request's: mGET or mHEAD
	presigned bool         // the taken request is signed in its query
	spans     []fieldSpan  // where each field lies in buf
	opt       [numOpts]int // each slot's field: its index in spans + 1, 0 if absent
	fields    sigv4.Header
	resp      fasthttp.Response // an error's answer
	head      []byte            // resp's head, as sent
	hd        laneHead          // a 200 answer's head
	// The Date header's value, for the second dateSec.
	dateSec int64
	dateVal []byte
}

// date is the Date header's value for an answer begun at now, formatted
// once a second.
func (lc *laneConn) date(now time.Time) []byte {
	if sec := now.Unix(); sec != lc.dateSec || lc.dateVal == nil {
		lc.dateSec = sec
		lc.dateVal = fasthttp.AppendHTTPDate(lc.dateVal[:0], now)
	}
	return lc.dateVal
}

// loop answers c's requests until one is not the lane's (true: hand the
// connection off, buf[:n] unread) or the connection is to close (false).
//
// Its reads run under the poller's RawConn.Read, which keeps the socket's
// readiness between step's calls. A read that leaves room in the buffer
// has emptied the socket, so step then waits for the poller without
// reading again, as an epoll server does; a net.Conn's Read clears that
// readiness as it begins and so must read to find out, which fails once
// per request on a connection whose client waits for each answer.
//
// pre, what was read of the connection already (by fasthttp, before it
// gave the connection back), is answered first; it fits the buffer.
func (lc *laneConn) loop(pre []byte) bool {
	sc, ok := lc.c.Conn.(syscall.Conn)
	if !ok { // cannot happen: the lane serves plain TCP
		lc.c.pre = pre
		return true
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	bp := laneBufs.Get().(*[]byte)
	defer laneBufs.Put(bp)
	lc.buf = *bp
	if lc.n = copy(lc.buf, pre); lc.n == 0 || lc.answerAll() {
		if !lc.wait() {
			return false
		}
		err = raw.Read(lc.step)
	}
	if lc.handOff {
		lc.c.pre = append([]byte(nil), lc.buf[:lc.n]...)
		return true
	}
	if lc.n > 0 && errors.Is(err, os.ErrDeadlineExceeded) {
		lc.timedOut()
	}
	return false
}

// step reads what the socket fd holds and answers each whole request in
// it. It returns false to wait until fd is readable, true to stop:
// lc.handOff says whether the connection goes to fasthttp.
func (lc *laneConn) step(fd uintptr) bool {
	for {
		room := len(lc.buf) - lc.n
		m, err := syscall.Read(int(fd), lc.buf[lc.n:])
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return !lc.wait()
		case err != nil || m <= 0: // an error, or the client closed it
			return true
		case !lc.busy(): // Shutdown closed it first
			return true
		}
		if !lc.c.used.Load() {
			lc.c.used.Store(true)
		}
		lc.n += m
		if !lc.answerAll() {
			return true
		}
		if m < room { // the socket is empty
			return !lc.wait()
		}
	}
}

// answerAll answers each whole request head in buf; false to stop (a
// request the lane does not take, or one whose answer closes).
func (lc *laneConn) answerAll() bool {
	for {
		end := headEnd(lc.buf[:lc.n])
		switch {
		case end == 0 && lc.n < len(lc.buf): // the rest is to come
			return true
		case end <= 0 || !lc.takes(lc.buf[:end]): // too large, bare LFs, or not the lane's
			lc.handOff = true
			return false
		}
		keep := lc.answer(lc.buf[:end])
		lc.served++
		lc.l.s.metrics.laneGets.Inc()
		lc.n = copy(lc.buf, lc.buf[end:lc.n])
		lc.headFrom = time.Time{}
		if !keep {
			return false
		}
	}
}

// wait readies lc to wait for bytes: the rest of a head under the
// header's deadline (the first request's from the accept, a later one's
// from its first wait), a connection with nothing buffered idle under
// the idle deadline. False once Shutdown began and lc is idle: it closes.
func (lc *laneConn) wait() bool {
	s := lc.l.s
	switch {
	case lc.served == 0:
		if lc.n == 0 && !lc.waitIdle() {
			return false
		}
		lc.readDeadline(lc.accepted, s.opts.ReadHeaderTimeout)
	case lc.n > 0:
		if lc.headFrom.IsZero() {
			lc.headFrom = time.Now()
		}
		lc.readDeadline(lc.headFrom, s.opts.ReadHeaderTimeout)
	case !lc.waitIdle():
		return false
	default:
		lc.readDeadline(time.Now(), s.opts.IdleTimeout)
	}
	return true
}

// readDeadline bounds the reads to come by from+d, and writeDeadline the
// writes by ioTimeout from now, each unless the deadline set lies within
// renewGap of it already: a deadline's move is a timer's, and a
// keep-alive connection answers thousands of requests a second.
func (lc *laneConn) readDeadline(from time.Time, d time.Duration) {
	if at := from.Add(d); due(&lc.readBy, at, renewGap(d)) {
		lc.c.SetReadDeadline(at)
	}
}

func (lc *laneConn) writeDeadline() {
	d := lc.l.s.ioTimeout
	if at := time.Now().Add(d); due(&lc.writeBy, at, renewGap(d)) {
		lc.c.SetWriteDeadline(at)
	}
}

// due reports whether a deadline set at *set is to move to at: it lies
// after at, or more than gap before it. If so, at is recorded as set.
// A deadline kept is never less than d-gap away, so never passed.
func due(set *time.Time, at time.Time, gap time.Duration) bool {
	if !set.After(at) && at.Sub(*set) < gap {
		return false
	}
	*set = at
	return true
}

// headEnd is where the head in b ends (past "\r\n\r\n"); 0 if b holds no
// whole head yet; -1 if its lines end in bare LFs (fasthttp's to judge).
func headEnd(b []byte) int {
	if i := bytes.Index(b, []byte("\r\n\r\n")); i >= 0 {
		return i + 4
	}
	if bytes.Contains(b, []byte("\n\n")) {
		return -1
	}
	return 0
}

// timedOut answers a head that did not arrive in time as fasthttp's path
// does (protocolError): 400 RequestTimeout, and the connection closes.
func (lc *laneConn) timedOut() {
	s := lc.l.s
	r := &request{start: time.Now(), id: newRequestID(), method: mGET}
	lc.resp.Reset()
	lc.resp.SetConnectionClose()
	setRequestID(sinkOf(&lc.resp.Header), r.id)
	s.answerError(&lc.resp, r, s3err.New(s3err.RequestTimeout, ""))
	lc.sendAnswer(r)
}

// sendAnswer writes resp, an answer whose body is in memory (an error),
// and reports r; it reports whether the connection stays open.
func (lc *laneConn) sendAnswer(r *request) bool {
	resp := &lc.resp
	body := resp.Body()
	// As fasthttp's Response.Write: an answer that has no body (to a HEAD;
	// a 1xx, 204 or 304) names no length unless it holds one.
	st := resp.StatusCode()
	if bodyless := r.method == mHEAD || st < 200 || st == http.StatusNoContent || st == http.StatusNotModified; !bodyless || len(body) > 0 {
		resp.Header.SetContentLength(len(body))
	}
	lc.head = lc.setServer(resp).AppendBytes(lc.head[:0])
	lc.writeDeadline()
	v := net.Buffers{lc.head, body}
	_, err := lc.c.WriteBuffers(&v)
	r.status = resp.StatusCode()
	lc.l.s.report(r, int64(len(body)), nil)
	return err == nil && !resp.ConnectionClose()
}

// setServer sets the Server header fasthttp would (and, as fiber's
// server does, no default Content-Type) and returns the head.
func (lc *laneConn) setServer(resp *fasthttp.Response) *fasthttp.ResponseHeader {
	resp.Header.SetNoDefaultContentType(true)
	if name := lc.l.s.opts.ServerHeader; name != "" {
		resp.Header.SetServer(name)
	}
	return &resp.Header
}
