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
	served   int // requests answered
	buf      []byte
	n        int
	// Working memory kept across requests.
	method string       // the taken request's: mGET or mHEAD
	spans  []fieldSpan  // where each field lies in buf
	opt    [numOpts]int // each slot's field: its index in spans + 1, 0 if absent
	fields sigv4.Header
	resp   fasthttp.Response // an error's answer
	head   []byte            // resp's head, as sent
	hd     laneHead          // a 200 answer's head
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
func (lc *laneConn) loop() bool {
	bp := laneBufs.Get().(*[]byte)
	defer laneBufs.Put(bp)
	lc.buf = *bp
	for {
		end, ok := lc.readHead()
		if !ok {
			return false
		}
		if end < 0 || !lc.takes(lc.buf[:end]) {
			lc.c.pre = append([]byte(nil), lc.buf[:lc.n]...)
			return true
		}
		keep := lc.answer(lc.buf[:end])
		lc.served++
		lc.l.s.metrics.laneGets.Inc()
		lc.n = copy(lc.buf, lc.buf[end:lc.n])
		if !keep {
			return false
		}
	}
}

// readHead reads until buf holds a whole request head and returns its
// end (past its blank line); -1 for a head the lane leaves to fasthttp
// (too large for the buffer, or its lines end in bare LFs); false when
// the connection is to close: the client closed it or went quiet, or
// Shutdown closed it.
func (lc *laneConn) readHead() (int, bool) {
	s := lc.l.s
	waiting := lc.n == 0 // for a request's first byte: an idle connection
	switch {
	case !waiting:
		lc.c.SetReadDeadline(time.Now().Add(s.opts.ReadHeaderTimeout))
	case !lc.l.waitIdle(lc.c):
		return 0, false
	case lc.served == 0: // the first request's head is bounded from the accept
		lc.c.SetReadDeadline(lc.accepted.Add(s.opts.ReadHeaderTimeout))
	default:
		lc.c.SetReadDeadline(time.Now().Add(s.opts.IdleTimeout))
	}
	for {
		if end := headEnd(lc.buf[:lc.n]); end != 0 {
			if waiting {
				lc.l.busy(lc.c)
			}
			return end, true
		}
		if lc.n == len(lc.buf) {
			return -1, true
		}
		m, err := lc.c.Read(lc.buf[lc.n:])
		lc.n += m
		if waiting && (m > 0 || err != nil) {
			waiting = false
			lc.l.busy(lc.c)
			if m > 0 && lc.served > 0 {
				lc.c.SetReadDeadline(time.Now().Add(s.opts.ReadHeaderTimeout))
			}
		}
		if err != nil {
			if lc.n > 0 && errors.Is(err, os.ErrDeadlineExceeded) {
				lc.timedOut()
			}
			return 0, false
		}
	}
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
	lc.c.SetWriteDeadline(time.Now().Add(lc.l.s.ioTimeout))
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
