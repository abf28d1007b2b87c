// The signed admin API under /_granary/ (a path no bucket can have, since
// bucket names cannot start with '_'): calls that act on the node rather
// than on objects, authenticated with the node's S3 credentials.
//
// POST /_granary/flush?bucket=B&prefix=P waits until every write-back
// object under B/P accepted before the call is at the origin. The answer
// is 200 with a stream of JSON lines: progress lines, then a last line
// with "done":true or an "error"; a stream that ends without one failed.
package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/granary-dev/granary/api/s3err"
	"github.com/granary-dev/granary/gateway"
)

// adminPrefix starts every admin API path.
var adminPrefix = []byte("/_granary/")

// isAdminAPI reports whether c addresses the admin API.
func isAdminAPI(c *fiber.Ctx) bool {
	return bytes.HasPrefix(c.Request().URI().PathOriginal(), adminPrefix)
}

// serveAdminAPI authenticates and answers an admin API request.
func (s *Server) serveAdminAPI(c *fiber.Ctx, r *request) error {
	path := string(c.Request().URI().PathOriginal())
	switch {
	case path == "/_granary/flush" && r.method == mPOST:
		r.op = opFlush
	case path == warmRoute:
		r.op = warmOp(r.method)
	case path == statusRoute && r.method == mGET:
		r.op = opStatus
	case path == pinRoute:
		r.op = pinOp(r.method)
	case path == historyRoute && r.method == mGET:
		r.op = opHistory
	}
	auth, err := s.authenticate(c, r)
	if err != nil {
		return err
	}
	r.auth, r.policy = auth, s.access.Policy(auth.AccessKey)
	if err := s.authorizeAdmin(c, r); err != nil {
		return err
	}
	switch r.op {
	case opFlush:
		return s.flush(c, r)
	case opWarmStart, opWarmStatus, opWarmCancel:
		return s.warm(c, r)
	case opStatus:
		return s.status(c, r)
	case opPin, opUnpin, opPins:
		return s.pin(c, r)
	case opHistory:
		return s.history(c, r)
	}
	return s3err.New(s3err.InvalidRequest, "unknown admin call "+r.method+" "+path)
}

// FlushLine is one line of the flush stream: progress lines, then one
// with Done set or Error non-empty (granary flush reads them).
type FlushLine struct {
	Pending      int    `json:"pending"`
	PendingBytes int64  `json:"pending_bytes"`
	Uploaded     int    `json:"uploaded"`
	LastError    string `json:"last_error,omitempty"`
	Done         bool   `json:"done,omitempty"`
	Error        string `json:"error,omitempty"`
}

func (s *Server) flush(c *fiber.Ctx, r *request) error {
	args := c.Request().URI().QueryArgs()
	bucket, prefix := string(args.Peek("bucket")), string(args.Peek("prefix"))
	r.bucket = bucket
	if err := checkBucket(bucket); err != nil {
		return err
	}
	if err := s.engine.HeadBucket(r.ctx, bucket); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(r.ctx)
	pr, pw := io.Pipe()
	go runFlush(ctx, s.engine, bucket, prefix, pw)
	resp := c.Response()
	resp.Header.SetContentType("application/x-ndjson")
	r.streaming = true // reported by the stream's Close
	resp.SetBodyStream(&flushStream{s: s, r: r, pr: pr, cancel: cancel, conn: c.Context().Conn()}, -1)
	return nil
}

// flushBeat is how often a flush repeats its progress when the log says
// nothing new: the writes are how a client that went away is noticed.
const flushBeat = time.Second

// runFlush runs the flush, writing its progress and verdict to pw as JSON
// lines, and closes pw.
func runFlush(ctx context.Context, e *gateway.Engine, bucket, prefix string, pw *io.PipeWriter) {
	var mu sync.Mutex // guards enc and last
	enc := json.NewEncoder(pw)
	var last gateway.FlushStatus
	beat := time.NewTicker(flushBeat)
	defer beat.Stop()
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-beat.C:
				mu.Lock()
				enc.Encode(progressLine(last))
				mu.Unlock()
			}
		}
	}()
	err := e.Flush(ctx, bucket, prefix, func(st gateway.FlushStatus) {
		mu.Lock()
		defer mu.Unlock()
		last = st
		enc.Encode(progressLine(st))
	})
	close(done)
	mu.Lock()
	defer mu.Unlock()
	final := FlushLine{Done: err == nil, Uploaded: last.Uploaded}
	if err != nil {
		final.Error = err.Error()
	}
	enc.Encode(final)
	pw.Close()
}

func progressLine(st gateway.FlushStatus) FlushLine {
	return FlushLine{Pending: st.Pending, PendingBytes: st.PendingBytes, Uploaded: st.Uploaded, LastError: st.LastError}
}

// flushStream is the body of a flush answer: the lines the flush writes,
// with the write deadline renewed as they go. Closing it (the answer is
// written, or the client is gone) ends the flush.
type flushStream struct {
	s      *Server
	r      *request
	pr     *io.PipeReader
	cancel context.CancelFunc
	conn   net.Conn
	sent   int64
	closed bool
}

func (f *flushStream) Read(p []byte) (int, error) {
	n, err := f.pr.Read(p)
	if f.conn != nil && n > 0 {
		_ = f.conn.SetWriteDeadline(time.Now().Add(f.s.opts.IOTimeout))
	}
	f.sent += int64(n)
	return n, err
}

// Close ends the flush and reports the request. It is idempotent.
func (f *flushStream) Close() error {
	if f.closed {
		return nil
	}
	f.closed = true
	f.cancel()
	err := f.pr.Close()
	f.s.report(f.r, f.sent, nil)
	return err
}
