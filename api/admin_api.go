// The admin face: the signed admin API under /_granary/ (a path no bucket
// can have, since bucket names cannot start with '_'): calls that act on
// the node rather than on objects, authenticated with the node's S3
// credentials (the S3 face's).
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
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/granary-dev/granary/access"
	"github.com/granary-dev/granary/api/s3err"
	"github.com/granary-dev/granary/cluster"
	"github.com/granary-dev/granary/cluster/peer"
	"github.com/granary-dev/granary/gateway"
	"github.com/granary-dev/granary/ops"
)

// AdminOptions configure the admin face. S3, Ops and History are
// required.
type AdminOptions struct {
	// S3 is the face whose keys, region and domains verify admin calls
	// (they are S3-signed requests), and whose engine they act on.
	S3 *S3
	// Ops runs the warm-ups and status the admin API serves.
	Ops *ops.Ops
	// History is the monitor whose traffic history the history call
	// answers (mounted on the same Server, which runs its recorder).
	History *Monitor
	// Self, Node and Client make /_granary/status report on the whole
	// cluster when Node and Client are set: Node is the cluster view,
	// Client the peer client it asks the members with, Self this member.
	// Without them it reports this node only.
	Self   cluster.Member
	Node   *cluster.Node
	Client *peer.Client
}

// Admin is the admin face.
type Admin struct {
	*core
	opts   AdminOptions
	s3     *S3 // verifies the calls
	engine *gateway.Engine
	access *access.Registry
	ops    *ops.Ops
	// partitions is the ring call's table of primaries (admin_ring.go).
	partitions partitionTable
}

// NewAdmin returns the admin face of o.
func NewAdmin(o AdminOptions) (*Admin, error) {
	if o.S3 == nil || o.Ops == nil || o.History == nil {
		return nil, errors.New("api: the admin API's S3, Ops and History are required")
	}
	return &Admin{opts: o, s3: o.S3, engine: o.S3.engine, access: o.S3.access, ops: o.Ops}, nil
}

func (a *Admin) mount(c *core) { a.core = c }

// adminPrefix starts every admin API path.
var adminPrefix = []byte("/_granary/")

// claims takes every path under adminPrefix that no face asked before it
// claimed (the console's, the peer protocol's).
func (a *Admin) claims(c *fiber.Ctx, _ *request) bool {
	return bytes.HasPrefix(c.Request().URI().PathOriginal(), adminPrefix)
}

// serve authenticates and answers an admin API request.
func (a *Admin) serve(c *fiber.Ctx, r *request) error {
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
	case path == objectsRoute && r.method == mGET:
		r.op = opObjects
	case path == evictRoute && r.method == mPOST:
		r.op = opEvict
	case path == writeBackRoute && r.method == mGET:
		r.op = opWriteBack
	case path == ringRoute && r.method == mGET:
		r.op = opRing
	}
	auth, err := a.s3.authenticate(c, r)
	if err != nil {
		return err
	}
	r.auth, r.policy = auth, a.access.Policy(auth.AccessKey)
	if err := a.authorizeAdmin(c, r); err != nil {
		return err
	}
	switch r.op {
	case opFlush:
		return a.flush(c, r)
	case opWarmStart, opWarmStatus, opWarmCancel:
		return a.warm(c, r)
	case opStatus:
		return a.status(c, r)
	case opPin, opUnpin, opPins:
		return a.pin(c, r)
	case opHistory:
		return a.history(c, r)
	case opObjects:
		return a.objects(c, r)
	case opEvict:
		return a.evict(c, r)
	case opWriteBack:
		return a.writeBack(c, r)
	case opRing:
		return a.ring(c)
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

func (a *Admin) flush(c *fiber.Ctx, r *request) error {
	args := c.Request().URI().QueryArgs()
	bucket, prefix := string(args.Peek("bucket")), string(args.Peek("prefix"))
	r.bucket = bucket
	if err := checkBucket(bucket); err != nil {
		return err
	}
	if err := a.engine.HeadBucket(r.ctx, bucket); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(r.ctx)
	pr, pw := io.Pipe()
	go runFlush(ctx, a.engine, bucket, prefix, pw)
	resp := c.Response()
	resp.Header.SetContentType("application/x-ndjson")
	r.streaming = true // reported by the stream's Close
	resp.SetBodyStream(&flushStream{s: a.core, r: r, pr: pr, cancel: cancel, conn: c.Context().Conn()}, -1)
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
	s      *core
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
		_ = f.conn.SetWriteDeadline(time.Now().Add(f.s.ioTimeout))
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
