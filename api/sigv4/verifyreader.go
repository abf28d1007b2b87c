// The verifying body reader and the invariant it keeps.
//
// INVARIANT: the consumer of Result.Body never receives the final byte of
// the payload unless every check passed: the x-amz-content-sha256 hash,
// every aws-chunked chunk signature and the trailer signature, the trailer
// and header checksums, Content-MD5, and the declared length (no fewer and
// no more bytes). verifyReader keeps the last byte it has read in held and
// releases it only after its source reported io.EOF and finish found every
// check good; on any failure Read returns the *s3err.Error instead, so an
// origin upload that reads this body fails rather than storing a bad object.
// The aws-chunked decoder under it keeps its own half of the bargain: it
// releases a signed chunk's data only after that chunk's signature verified,
// and reports io.EOF only after the final chunk and the trailers did.
package sigv4

import (
	"bytes"
	"errors"
	"hash"
	"io"

	"github.com/granary-dev/granary/api/s3err"
)

// check is one digest of the payload verified at its end.
type check struct {
	h       hash.Hash
	want    []byte     // expected digest; nil means the trailer named trailer
	trailer string     // lower-case trailer name when want is nil
	code    s3err.Code // answer on mismatch
	size    int        // digest size, to validate a trailer value
}

// trailerSource yields the trailers an aws-chunked body ended with.
type trailerSource interface {
	trailer(name string) (string, bool)
}

// verifyReader checks a payload as it streams and holds back its final byte
// until every check passed (see the invariant above).
type verifyReader struct {
	src      io.Reader
	declared int64 // expected payload length, -1 if unknown
	n        int64 // bytes read from src
	checks   []check
	trailers trailerSource // nil unless src is an aws-chunked decoder

	held    byte // the last byte read, not yet released
	hasHeld bool
	scratch [1]byte
	done    bool  // src ended and every check passed
	err     error // sticky failure
}

func newVerifyReader(src io.Reader, declared int64, checks []check, ts trailerSource) *verifyReader {
	return &verifyReader{src: src, declared: declared, checks: checks, trailers: ts}
}

// maxEmptyReads bounds consecutive (0, nil) reads from the source.
const maxEmptyReads = 100

// Read implements io.Reader under the invariant of this file.
func (r *verifyReader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	for empty := 0; !r.done; {
		dst := p
		if r.hasHeld {
			dst = p[1:]
		}
		if len(dst) == 0 { // p has room for the held byte only
			dst = r.scratch[:]
		}
		m, err := r.src.Read(dst)
		r.consume(dst[:m])
		if r.err == nil && err != nil {
			r.finish(err)
		}
		if r.err != nil {
			return 0, r.err
		}
		if m == 0 && !r.done {
			if empty++; empty >= maxEmptyReads {
				r.err = io.ErrNoProgress
				return 0, r.err
			}
			continue
		}
		if n, ok := r.release(p, dst, m); ok {
			return n, nil
		}
	}
	return r.drain(p)
}

// release hands out what the last read produced, keeping the final byte
// back unless the source is done. It reports false when nothing can be
// released yet.
func (r *verifyReader) release(p, dst []byte, m int) (int, bool) {
	if m > 0 && &dst[0] == &r.scratch[0] {
		// p holds one byte: give the held one and hold the new one.
		p[0], r.held = r.held, r.scratch[0]
		return 1, true
	}
	n := m
	if r.hasHeld {
		p[0] = r.held
		n++
	}
	if r.done {
		r.hasHeld = false
		return n, n > 0
	}
	// n >= 1 here: keep p[n-1] back.
	r.held, r.hasHeld = p[n-1], true
	return n - 1, n > 1
}

// drain releases the held byte after the source ended well, then io.EOF.
func (r *verifyReader) drain(p []byte) (int, error) {
	if r.hasHeld {
		p[0], r.hasHeld = r.held, false
		return 1, nil
	}
	return 0, io.EOF
}

// consume feeds b to every check and enforces the declared length.
func (r *verifyReader) consume(b []byte) {
	if len(b) == 0 {
		return
	}
	r.n += int64(len(b))
	if r.declared >= 0 && r.n > r.declared {
		r.err = errTooLong()
		return
	}
	for i := range r.checks {
		r.checks[i].h.Write(b)
	}
}

// finish handles the end of the source: an error is kept; io.EOF runs the
// length and digest checks and, if all pass, marks the reader done.
func (r *verifyReader) finish(err error) {
	if !errors.Is(err, io.EOF) {
		r.err = mapReadErr(err)
		return
	}
	if r.declared >= 0 && r.n < r.declared {
		r.err = s3err.New(s3err.IncompleteBody, "")
		return
	}
	for i := range r.checks {
		if err := r.verify(&r.checks[i]); err != nil {
			r.err = err
			return
		}
	}
	r.done = true
}

// verify compares one check's digest with what the request declared.
func (r *verifyReader) verify(c *check) error {
	want := c.want
	if want == nil {
		v, ok := "", false
		if r.trailers != nil {
			v, ok = r.trailers.trailer(c.trailer)
		}
		if !ok {
			return s3err.New(s3err.MalformedTrailerError, "The request did not include the trailer "+c.trailer+".")
		}
		if want, ok = decodeDigest(v, c.size); !ok {
			return s3err.New(s3err.MalformedTrailerError, "The value of the trailer "+c.trailer+" is not a valid digest.")
		}
	}
	var arr [64]byte
	if !bytes.Equal(c.h.Sum(arr[:0]), want) {
		return s3err.New(c.code, "")
	}
	return nil
}

// mapReadErr turns a premature end of the body into IncompleteBody and
// passes every other error through.
func mapReadErr(err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return s3err.New(s3err.IncompleteBody, "")
	}
	return err
}

func errTooLong() *s3err.Error {
	return s3err.New(s3err.IncompleteBody, "The request body is longer than its declared length.")
}
