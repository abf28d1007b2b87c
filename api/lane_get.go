// The requests the GET lane takes and how it answers them: a GetObject or
// HeadObject, signed with SigV4 in its header, presigned (SigV4 or
// SigV2) or unsigned (an anonymous read), of a bucket and key named
// path-style or virtual-hosted, carrying only the fields SDKs and HTTP
// clients send with a GET, a range and the conditions among them, and no
// query but a presigned URL's and x-id=GetObject. Anything else (another
// query, a malformed escape, a name S3 refuses, a field or parameter the
// lane does not know or one sent twice) is fasthttp's, which answers it
// as it answers every request. What the lane takes it answers with the
// S3 face's own code: the signature's check, the policy, the engine's
// Get (openGet) or Head (headChecked, headAnswer), the headers and the
// body as attachBody sends them, errors as writeError writes them.
package api

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"

	"github.com/granary-dev/granary/access"
	"github.com/granary-dev/granary/api/s3err"
	"github.com/granary-dev/granary/api/sigv4"
	"github.com/granary-dev/granary/gateway"
	"github.com/granary-dev/granary/internal/membody"
)

// The fields the lane reads, each a slot of laneConn.opt; a request
// carries each at most once.
const (
	optNone = iota // a field passed to the signature's check only
	optHost
	optAuth
	optRange
	optIfMatch
	optIfNoneMatch
	optIfModifiedSince
	optIfUnmodifiedSince
	numOpts
)

// laneField is each field a taken request may carry, by lower-case name,
// with its slot: the ones boto3, the AWS CLI, minio-go, Go's net/http
// and the AWS SDKs (x-amz-user-agent) send with a signed GET.
// x-amz-checksum-mode (boto3 sends ENABLED by default) asks for the
// object's stored checksums, which the node keeps none of: fiber's path
// ignores it too.
var laneField = map[string]int{
	"host": optHost, "authorization": optAuth, "range": optRange,
	"if-match": optIfMatch, "if-none-match": optIfNoneMatch,
	"if-modified-since": optIfModifiedSince, "if-unmodified-since": optIfUnmodifiedSince,
	"user-agent": optNone, "accept": optNone, "accept-encoding": optNone,
	"x-amz-date": optNone, "x-amz-content-sha256": optNone, "x-amz-checksum-mode": optNone,
	"amz-sdk-invocation-id": optNone, "amz-sdk-request": optNone, "connection": optNone,
	"x-amz-user-agent": optNone,
}

// laneParams are the query parameters a taken request may carry: a
// presigned URL's, SigV4's or SigV2's (boto3's default), and x-id, the
// operation's name the AWS SDKs for Go (v2) and JavaScript (v3) add to a
// GetObject. The signature's check judges a presigned URL's parameters
// as it does on fiber's path, from the same query as sent.
var laneParams = []string{"x-id",
	"X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date", "X-Amz-Expires", "X-Amz-SignedHeaders", "X-Amz-Signature",
	"AWSAccessKeyId", "Expires", "Signature"}

// laneParam is each of laneParams' bit in the set a query carries.
var laneParam = func() map[string]int {
	m := map[string]int{}
	for i, p := range laneParams {
		m[p] = 1 << i
	}
	return m
}()

// paramXID is x-id's bit: the one parameter that does not sign.
var paramXID = laneParam["x-id"]

// laneTarget reports whether path may be taken: printable ASCII with no
// fragment (its escapes objectPath decodes, as splitTarget does).
func laneTarget(path []byte) bool {
	if len(path) == 0 || path[0] != '/' {
		return false
	}
	for _, c := range path {
		if c <= ' ' || c >= 0x7f || c == '?' || c == '#' {
			return false
		}
	}
	return true
}

// laneQuery reports whether a request of lc.method may carry query, and
// records whether it is presigned: each parameter among laneParams,
// once, with a value of printable ASCII. x-id names GetObject on a GET
// alone.
func (lc *laneConn) laneQuery(query []byte) bool {
	seen := 0
	for rest := query; len(rest) > 0; {
		var p []byte
		p, rest, _ = bytes.Cut(rest, []byte("&"))
		name, value, ok := bytes.Cut(p, []byte("="))
		bit := laneParam[string(name)] // no allocation: a map index by a converted slice
		if !ok || bit == 0 || seen&bit != 0 || !laneValue(value) {
			return false
		}
		if bit == paramXID && (lc.method != mGET || string(value) != "GetObject") {
			return false
		}
		seen |= bit
	}
	lc.presigned = seen&^paramXID != 0
	return true
}

// laneValue reports whether v is printable ASCII with no space,
// fragment or second query.
func laneValue(v []byte) bool {
	for _, c := range v {
		if c <= ' ' || c >= 0x7f || c == '#' || c == '?' {
			return false
		}
	}
	return true
}

// takes reports whether the lane answers the request whose head is
// head, recording its fields' spans.
func (lc *laneConn) takes(head []byte) bool {
	line, rest, _ := bytes.Cut(head, []byte("\r\n"))
	lc.method = mGET
	target, ok := bytes.CutPrefix(line, []byte("GET "))
	if !ok {
		lc.method = mHEAD
		if target, ok = bytes.CutPrefix(line, []byte("HEAD ")); !ok {
			return false
		}
	}
	if target, ok = bytes.CutSuffix(target, []byte(" HTTP/1.1")); !ok {
		return false
	}
	path, query, _ := bytes.Cut(target, []byte("?"))
	if !laneTarget(path) || !lc.laneQuery(query) {
		return false
	}
	lc.spans = lc.spans[:0]
	lc.opt = [numOpts]int{}
	off := len(line) + 2
	for len(rest) > 2 { // the head ends in the blank line's CRLF
		l, next, _ := bytes.Cut(rest, []byte("\r\n"))
		name, value, ok := bytes.Cut(l, []byte(":"))
		if !ok || len(name) == 0 || bytes.IndexByte(l, '\n') >= 0 || len(name) > len("amz-sdk-invocation-id") {
			return false
		}
		var lower [24]byte
		for i, c := range name {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			lower[i] = c
		}
		lname := lower[:len(name)]
		slot, known := laneField[string(lname)] // no allocation: a map index by a converted slice
		if !known || (slot != optNone && lc.opt[slot] != 0) {
			return false
		}
		lc.opt[slot] = len(lc.spans) + 1
		v := trimSpace(value)
		switch {
		case slot == optAuth && !bytes.HasPrefix(v, []byte("AWS4-HMAC-SHA256 ")):
			return false
		case string(lname) == "connection" && !asciiEqualFold(v, "keep-alive"):
			return false
		}
		vOff := off + len(name) + 1 + (len(value) - len(bytes.TrimLeft(value, " \t")))
		lc.spans = append(lc.spans, fieldSpan{[2]int{off, off + len(name)}, [2]int{vOff, vOff + len(v)}})
		off += len(l) + 2
		rest = next
	}
	// Signed in the header, the query or not at all (both: fasthttp's
	// error).
	both := lc.opt[optAuth] != 0 && lc.presigned
	return lc.opt[optHost] != 0 && !both && lc.objectPath(path)
}

// value is the value of the field in slot, nil if the request has none.
func (lc *laneConn) value(slot int) []byte {
	if i := lc.opt[slot]; i > 0 {
		sp := lc.spans[i-1]
		return lc.buf[sp.value[0]:sp.value[1]]
	}
	return nil
}

// query is what the request asks of its object: its range, conditions.
// The lane sends a body that lies in a file only from there (its
// connections are plain TCP: sendFileBody).
func (lc *laneConn) query() getQuery {
	q := getQuery{fileFrom: membody.FileMin}
	q.rng, q.kind = parseRange(lc.value(optRange))
	q.cond, q.hasCond = conditionsOf(lc.value(optIfMatch), lc.value(optIfNoneMatch),
		lc.value(optIfModifiedSince), lc.value(optIfUnmodifiedSince))
	return q
}

// objectPath reports whether path names an object by a bucket and key S3
// accepts (objectOf), its escapes well formed.
func (lc *laneConn) objectPath(path []byte) bool {
	bucket, key, _, err := objectOf(string(lc.value(optHost)), string(path), lc.l.s.s3.domainSuffixes)
	return err == nil && len(key) > 0 && checkBucket(bucket) == nil && checkKey(key) == nil
}

// objectOf is the bucket and key the raw path names, decoded as
// splitTarget decodes them: the host's bucket and the path when the host
// lies under one of suffixes (virtual-hosted style), else the path's
// first segment and the rest; virtual says which. Without escapes they
// are path's own bytes.
func objectOf(host, path string, suffixes []string) (bucket, key string, virtual bool, err error) {
	if strings.IndexByte(path, '%') >= 0 {
		if path, err = decodePath([]byte(path)); err != nil {
			return "", "", false, err
		}
	}
	if b, ok := hostBucket(host, suffixes); ok {
		return b, path[1:], true, nil
	}
	bucket, key, _ = strings.Cut(path[1:], "/")
	return bucket, key, false, nil
}

// answer answers the taken request whose head is head and reports
// whether the connection stays open.
func (lc *laneConn) answer(head []byte) (keep bool) {
	s := lc.l.s
	r := s.newRequest(lc.method)
	r.op = opGetObject
	if r.method == mHEAD {
		r.op = opHeadObject
	}
	lc.resp.Reset()
	sent := false // a byte of the answer went out
	defer func() {
		if p := recover(); p != nil {
			s.reqLog(r).Error().Str("panic", fmt.Sprint(p)).Str("op", r.op.String()).Msg("handler panic")
			if !sent {
				lc.resp.Reset()
				lc.fail(r, s3err.New(s3err.InternalError, ""))
			}
			keep = false
		}
	}()
	if err := lc.authorize(r, head); err != nil {
		return lc.fail(r, err)
	}
	o, q, errh := objects{s.s3}, lc.query(), sinkOf(&lc.resp.Header)
	lc.hd.start(q.status(), s.opts.ServerHeader, lc.date(r.start))
	setRequestID(&lc.hd, r.id)
	if r.method == mHEAD {
		info, err := o.headChecked(errh, r, q)
		var n int64
		if err == nil {
			n, err = o.headAnswer(&lc.hd, errh, r, info, q)
		}
		if err != nil {
			return lc.fail(r, err)
		}
		sent = true
		return lc.sendHead(r, n)
	}
	obj, small, err := o.openGet(&lc.hd, errh, r, q)
	if err != nil {
		return lc.fail(r, err)
	}
	sent = true
	return lc.sendObject(r, obj, small)
}

// fail answers r with err as writeError does, with the headers lc.resp
// holds, and reports whether the connection stays open.
func (lc *laneConn) fail(r *request, err error) bool {
	setRequestID(sinkOf(&lc.resp.Header), r.id)
	lc.l.s.answerError(&lc.resp, r, err)
	return lc.sendAnswer(r)
}

// authorize checks the request's signature and its user's policy, as
// entry does for GetObject and HeadObject.
func (lc *laneConn) authorize(r *request, head []byte) error {
	s3 := lc.l.s.s3
	// One copy of the head that every string of the request shares, as
	// authenticate makes (the signing-key cache may keep some of them).
	str := string(head)
	line, _, _ := bytes.Cut(head, []byte("\r\n"))
	target := str[len(r.method)+1 : len(line)-len(" HTTP/1.1")]
	target, query, _ := strings.Cut(target, "?")
	hs := lc.spans[lc.opt[optHost]-1]
	host := str[hs.value[0]:hs.value[1]]
	var virtual bool
	r.bucket, r.key, virtual, _ = objectOf(host, target, s3.domainSuffixes) // objectPath took it
	if lc.opt[optAuth] == 0 && !lc.presigned {
		// Unsigned: the anonymous policy's if it lets anyone read the
		// object (S3.mayAnonymously); else the signature's check
		// refuses it as it refuses any unsigned request.
		if anon := s3.access.Anonymous(); !anon.Empty() && anon.Object(access.Read, r.bucket, r.key) {
			r.policy = anon
			return nil
		}
	}
	lc.fields = lc.fields[:0]
	req := sigv4.Request{Method: r.method, RawPath: target, RawQuery: query, Host: host,
		ContentLength: -1, Body: http.NoBody}
	if virtual {
		req.VirtualBucket = r.bucket
	}
	for _, sp := range lc.spans {
		lc.fields = append(lc.fields, sigv4.Field{Name: str[sp.name[0]:sp.name[1]], Value: str[sp.value[0]:sp.value[1]]})
	}
	req.Header = lc.fields
	err := s3.verifier.VerifyInto(&req, &r.authResult)
	clear(lc.fields) // the fields are the request's: not kept past it
	if err != nil {
		return err
	}
	r.auth, r.policy = &r.authResult, s3.access.Policy(r.authResult.AccessKey)
	if !r.policy.Object(access.Read, r.bucket, r.key) { // allows, for both
		return errAccessDenied()
	}
	return nil
}

// sendHead sends the head of a HEAD's answer, naming n bytes, and reports
// r; it reports whether the connection stays open.
func (lc *laneConn) sendHead(r *request, n int64) bool {
	s := lc.l.s
	head := lc.hd.end(n)
	r.status = lc.hd.status
	lc.writeDeadline()
	_, err := lc.c.Write(head)
	s.report(r, 0, nil)
	return err == nil
}

// sendObject sends the object's head and body as attachBody has
// fasthttp send them, and reports r; it reports whether the connection
// stays open.
func (lc *laneConn) sendObject(r *request, obj *gateway.Object, small *[]byte) bool {
	s := lc.l.s
	head := lc.hd.end(obj.Length)
	r.status = lc.hd.status
	c := lc.c
	lc.writeDeadline()
	if small != nil {
		v := net.Buffers{head, (*small)[:obj.Length]}
		_, err := c.WriteBuffers(&v)
		smallBufs.Put(small)
		obj.Close()
		s.report(r, obj.Length, nil)
		return err == nil
	}
	c.Hold()
	c.Write(head) //nolint:errcheck // held: it leaves with the body
	if fd, off, ok := obj.FileOnly(); ok {
		return lc.sendFileBody(r, obj, fd, off)
	}
	if b, ok := obj.Bytes(); ok && int64(len(b)) == obj.Length {
		body := membody.Owned(b, c, obj)
		_, err := body.WriteTo(c)
		if cerr := body.Close(); err == nil {
			err = cerr
		}
		s.report(r, obj.Length, nil)
		return err == nil
	}
	r.streaming = true
	st := newObjectStream(s.core, r, obj, c)
	st.WriteTo(c) //nolint:errcheck // st.err has it
	st.Close()    // reports r
	return st.err == nil
}

// sendFileBody sends obj's body, which lies in a file only (at off in
// fd: Object.FileOnly), after the head lc's connection holds, by
// reference; where the connection cannot (never here: the lane serves
// plain TCP), it sends the head and then the body read from the file.
func (lc *laneConn) sendFileBody(r *request, obj *gateway.Object, fd uintptr, off int64) bool {
	c := lc.c
	n, err := membody.SendFile(c, fd, off, int(obj.Length))
	switch {
	case errors.Is(err, errors.ErrUnsupported):
		if err = c.Release(); err == nil {
			_, err = io.Copy(c, obj)
		}
	case err == nil && n != obj.Length:
		err = io.ErrShortWrite
	}
	obj.Close()
	lc.l.s.report(r, obj.Length, nil)
	return err == nil
}
