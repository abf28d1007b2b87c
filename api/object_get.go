// GetObject and HeadObject: ranges, conditional headers (evaluated by the
// engine before any body byte is read), response header overrides, and the
// body: sent from memory when the engine holds it whole, read whole when
// small, streamed otherwise.
package api

import (
	"errors"
	"io"
	"math"
	"net/http"
	"strconv"
	"sync"

	"github.com/gofiber/fiber/v2"

	"github.com/granary-dev/granary/api/s3err"
	"github.com/granary-dev/granary/gateway"
	"github.com/granary-dev/granary/internal/membody"
	"github.com/granary-dev/granary/store"
)

// smallObject is the largest body read whole before the response starts,
// so a failure while reading it is still an S3 error, not a cut stream.
const smallObject = 64 << 10

// smallBufs holds smallObject-sized scratch buffers.
var smallBufs = sync.Pool{New: func() any { b := make([]byte, smallObject); return &b }}

// unsatisfiable is a range no object satisfies ("bytes=-0").
var unsatisfiable = gateway.Range{Start: math.MaxInt64, End: -1}

func (s objects) getObject(c *fiber.Ctx, r *request) error {
	if err := checkOverrides(c); err != nil {
		return err
	}
	h := &c.Request().Header
	rng, kind := parseRange(h.Peek("Range"))
	if sent, err := s.redirectToOwner(c, r, rng, kind); sent {
		return err
	}
	if part, err := s.partOf(c, r, kind); err != nil || part != nil {
		if err != nil {
			return err
		}
		rng, kind = part.rng, rangeValid
	}
	q := getQuery{rng: rng, kind: kind}
	q.cond, q.hasCond = parseConditions(h, getConditions)
	resp := c.Response()
	out := sinkOf(&resp.Header)
	obj, small, err := s.openGet(out, out, r, q)
	if err != nil {
		return err
	}
	setOverrides(c)
	resp.SetStatusCode(q.status())
	s.attachBody(c, r, obj, small)
	return nil
}

// getQuery is what a GetObject asks of its object: a range, conditions.
type getQuery struct {
	rng     gateway.Range
	kind    rangeKind
	cond    conditions
	hasCond bool
	// fileFrom: the answer's sender sends a body of this many bytes or
	// more from a file (gateway.GetOptions.FileFrom); 0: never.
	fileFrom int64
}

// status is the status of q's answer when its object opens.
func (q *getQuery) status() int {
	if q.kind != rangeNone {
		return http.StatusPartialContent
	}
	return http.StatusOK
}

// openGet opens r's object for q, its body read whole if small
// (readSmall), and sets the headers of its answer on h, Content-Range
// for a range; on failure it sets on errh the headers S3 sends with the
// error (getChecked). Shared by fiber's path and the GET lane's
// (lane_get.go).
func (s objects) openGet(h, errh headerSink, r *request, q getQuery) (*gateway.Object, *[]byte, error) {
	// No context of its own: a Get served from memory starts nothing that
	// outlives it (metadata loads and flights run detached), and a reader
	// cancels its own context when its stream is closed.
	var obj *gateway.Object
	var err error
	if q.kind == rangeNone && !q.hasCond {
		obj, err = s.engine.Get(r.ctx, r.bucket, r.key, gateway.GetOptions{FileFrom: q.fileFrom})
	} else {
		obj, err = s.getChecked(errh, r, q)
	}
	if err != nil {
		return nil, nil, err
	}
	small, err := s.opened(h, r, obj)
	if err != nil {
		return nil, nil, err
	}
	if q.kind != rangeNone {
		setContentRange(h, obj.Offset, obj.Length, obj.Info.Size)
	}
	return obj, small, nil
}

// getChecked is a Get with a range and/or conditions. On failure it sets
// on h the headers S3 sends with it: Content-Range "*/size" with a 416,
// the validators with a 304.
func (s objects) getChecked(h headerSink, r *request, q getQuery) (*gateway.Object, error) {
	var seen *store.ObjectInfo // the info Check ran on: Check runs inside Get
	opts := gateway.GetOptions{FileFrom: q.fileFrom, Check: func(info store.ObjectInfo) error {
		seen = &info
		if q.hasCond {
			return q.cond.check(info)
		}
		return nil
	}}
	switch q.kind {
	case rangeValid:
		opts.Range = &q.rng
	case rangeUnsatisfiable:
		opts.Range = &unsatisfiable
	}
	ctx := r.ctx
	obj, err := s.engine.Get(ctx, r.bucket, r.key, opts)
	if err == nil {
		return obj, nil
	}
	switch {
	case errors.Is(err, gateway.ErrInvalidRange):
		if seen == nil {
			info, herr := s.engine.Head(ctx, r.bucket, r.key)
			if herr != nil {
				return nil, err
			}
			seen = &info
		}
		h.set("Content-Range", "bytes */"+strconv.FormatInt(seen.Size, 10))
	case errors.Is(err, errNotModified) && seen != nil:
		setValidators(h, *seen)
	}
	return nil, err
}

// opened reads obj's body whole if it is small (readSmall) and sets the
// headers describing it on h; on failure obj is closed.
func (s objects) opened(h headerSink, r *request, obj *gateway.Object) (*[]byte, error) {
	small, err := readSmall(obj)
	if err != nil {
		obj.Close()
		return nil, err
	}
	setObjectHeaders(h, obj.Info)
	s.setPersisted(h, r)
	return small, nil
}

// readSmall reads a small body whole into a pooled buffer, returned for
// the caller to copy; nil when the engine holds the body in memory or it
// is too large (attachBody sends those).
func readSmall(obj *gateway.Object) (*[]byte, error) {
	if b, ok := obj.Bytes(); (ok && int64(len(b)) == obj.Length) || obj.Length > smallObject {
		return nil, nil
	}
	bp := smallBufs.Get().(*[]byte)
	if _, err := io.ReadFull(obj, (*bp)[:obj.Length]); err != nil {
		smallBufs.Put(bp)
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return nil, s3err.New(s3err.ServiceUnavailable, "the origin ended the object early")
		}
		return nil, err
	}
	return bp, nil
}

// attachBody sets the response body: the engine's in-memory bytes as they
// are, a small body read whole, or a stream that fasthttp closes once sent
// (or once the client is gone).
func (s objects) attachBody(c *fiber.Ctx, r *request, obj *gateway.Object, small *[]byte) {
	resp := c.Response()
	if small != nil {
		resp.SetBody((*small)[:obj.Length]) // copies
		smallBufs.Put(small)
		obj.Close()
		return
	}
	if b, ok := obj.Bytes(); ok && int64(len(b)) == obj.Length {
		// Immutable, and valid until obj is closed: once sent.
		membody.SetOwned(resp, b, c.Context().Conn(), obj)
		return
	}
	r.streaming = true
	conn := c.Context().Conn()
	membody.Stream(resp, newObjectStream(s.core, r, obj, conn), int(obj.Length), conn)
}

func (s objects) headObject(c *fiber.Ctx, r *request) error {
	if err := checkOverrides(c); err != nil {
		return err
	}
	h := &c.Request().Header
	out := sinkOf(&c.Response().Header)
	var q getQuery
	q.cond, q.hasCond = parseConditions(h, getConditions)
	info, err := s.headChecked(out, r, q)
	if err != nil {
		return err
	}
	q.rng, q.kind = parseRange(h.Peek("Range"))
	if part, err := s.partOf(c, r, q.kind); err != nil || part != nil {
		if err != nil {
			return err
		}
		q.rng, q.kind = part.rng, rangeValid
	}
	n, err := s.headAnswer(out, out, r, info, q)
	if err != nil {
		return err
	}
	setOverrides(c)
	c.Response().Header.SetContentLength(int(n))
	c.Response().SetStatusCode(q.status())
	return nil
}

// headChecked is the info of r's object, if q's conditions hold on it;
// with a 304 it sets the validators on errh.
func (s objects) headChecked(errh headerSink, r *request, q getQuery) (store.ObjectInfo, error) {
	info, err := s.engine.Head(r.ctx, r.bucket, r.key)
	if err != nil || !q.hasCond {
		return info, err
	}
	if err := q.cond.check(info); err != nil {
		if errors.Is(err, errNotModified) {
			setValidators(errh, info)
		}
		return info, err
	}
	return info, nil
}

// headAnswer sets on h the headers of a HEAD of info for q's range, and
// returns the length its answer names; for a range info cannot satisfy
// it sets Content-Range "*/size" on errh. Shared by fiber's path and the
// GET lane's (lane_get.go).
func (s objects) headAnswer(h, errh headerSink, r *request, info store.ObjectInfo, q getQuery) (int64, error) {
	n := info.Size
	rng := q.rng
	if q.kind == rangeUnsatisfiable {
		rng = unsatisfiable
	}
	if q.kind != rangeNone {
		var off int64
		var err error
		if off, n, err = rng.Resolve(info.Size); err != nil {
			errh.set("Content-Range", "bytes */"+strconv.FormatInt(info.Size, 10))
			return 0, err
		}
		setContentRange(h, off, n, info.Size)
	}
	setObjectHeaders(h, info)
	s.setPersisted(h, r)
	return n, nil
}

func setContentRange(h headerSink, off, n, size int64) {
	var buf [80]byte
	b := append(buf[:0], "bytes "...)
	b = strconv.AppendInt(b, off, 10)
	b = append(b, '-')
	b = strconv.AppendInt(b, off+n-1, 10)
	b = append(b, '/')
	b = strconv.AppendInt(b, size, 10)
	h.setBytes("Content-Range", b)
}
