// Frames of a chunk's answer (see answer.go): the member writes each
// frame's payload and then its tag; the asker returns a frame's bytes
// only once its tag matched.
package peer

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/granary-dev/granary/internal/membody"
)

// frameBatch is how many frames of a chunk held whole go to the
// connection in one writev.
const frameBatch = 16

// frameWriter is a chunk answer's body: left payload bytes from whole
// (held whole, immutable: a tier's bytes) or else from src, in frames.
// fasthttp writes it with WriteTo, and closes it.
type frameWriter struct {
	key   answerKey
	whole []byte
	src   io.Reader
	conn  net.Conn // the call's connection
	left  int64    // payload bytes not framed yet
	i     uint64   // the next frame's index
	buf   []byte   // a frame read from src
	// kept are the frames' hashes from an earlier send (nil: none);
	// else sums collects them, for cache under name once the last frame
	// is framed (cache nil: not kept).
	kept  [][TagSize]byte
	sums  [][TagSize]byte
	cache *hashCache
	name  hashKey
	// pending is what is framed and not written yet, in order: payloads
	// and tags (tags[k]), in slots of slots.
	pending net.Buffers
	slots   [2 * frameBatch][]byte
	tags    [frameBatch][TagSize]byte
}

func newFrameWriter(key answerKey, n int64, src io.Reader, conn net.Conn) *frameWriter {
	f := &frameWriter{key: key, src: src, conn: conn, left: n}
	f.whole, _ = wholeBytes(src, n)
	return f
}

// hashesIn makes f take its frames' hashes from cache under name, or
// keep them there once it has computed them all.
func (f *frameWriter) hashesIn(cache *hashCache, name hashKey) {
	frames := int((f.left + FrameSize - 1) / FrameSize)
	if kept := cache.get(name); len(kept) == frames {
		f.kept = kept
		return
	}
	f.cache, f.name, f.sums = cache, name, make([][TagSize]byte, 0, frames)
}

// hash returns the hash of frame f.i, whose payload is p.
func (f *frameWriter) hash(p []byte) [TagSize]byte {
	if f.kept != nil {
		return f.kept[f.i]
	}
	h := f.key.hasher.sum(f.key.scratch, p)
	if f.cache != nil {
		f.sums = append(f.sums, h)
	}
	return h
}

// direct reports whether the frames go past fasthttp's buffered writer
// straight to the connection: a chunk held whole and large.
func (f *frameWriter) direct() bool {
	return f.whole != nil && len(f.whole) >= membody.Direct && f.conn != nil
}

// wholeBytes returns the n bytes src would yield if a tier holds them
// whole (immutable: they may be sent as they are, without a copy).
func wholeBytes(src io.Reader, n int64) ([]byte, bool) {
	if whole, ok := src.(interface{ Bytes() ([]byte, bool) }); ok {
		if b, ok := whole.Bytes(); ok && int64(len(b)) == n {
			return b, true
		}
	}
	return nil, false
}

// frame frames up to max more frames into pending (empty when called).
func (f *frameWriter) frame(max int) error {
	f.pending = f.slots[:0]
	for k := 0; k < max && f.left > 0; k++ {
		n := min(int64(FrameSize), f.left)
		var p []byte
		if f.whole != nil {
			p, f.whole = f.whole[:n], f.whole[n:]
		} else {
			if f.buf == nil {
				f.buf = make([]byte, min(int64(FrameSize), f.left))
			}
			p = f.buf[:n]
			if _, err := io.ReadFull(f.src, p); err != nil {
				if errors.Is(err, io.EOF) {
					err = io.ErrUnexpectedEOF
				}
				return fmt.Errorf("peer: chunk ended %d bytes early: %w", f.left, err)
			}
		}
		f.left -= n
		f.tags[k] = f.key.maskHash(f.i, f.left == 0, f.hash(p))
		f.i++
		f.pending = append(f.pending, p, f.tags[k][:])
	}
	if f.left == 0 && f.cache != nil {
		f.cache.put(f.name, f.sums)
		f.cache = nil
	}
	return nil
}

// WriteTo writes the frames to w. A chunk held whole, on a connection
// that holds the answer's headers (membody.Stream), goes past w straight
// to the connection, the headers with the first frames, frameBatch
// frames per writev; a streamed one, a frame at a time (its buffer is
// reused).
func (f *frameWriter) WriteTo(w io.Writer) (int64, error) {
	batch := 1
	head := false // the headers the connection holds, sent with the first frames
	if f.direct() && membody.Held(f.conn) {
		head, w, batch = true, f.conn, frameBatch
	} else if err := membody.Release(f.conn); err != nil { // the head goes first
		return 0, err
	}
	var total int64
	for len(f.pending) > 0 || f.left > 0 {
		if len(f.pending) == 0 {
			if err := f.frame(batch); err != nil {
				return total, err
			}
		}
		var n int64
		var err error
		if head {
			n, err = membody.After(f.conn, &f.pending)
			head = false
		} else {
			n, err = writeBuffers(w, &f.pending)
		}
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// writeBuffers writes v to w, with one writev where w has it.
func writeBuffers(w io.Writer, v *net.Buffers) (int64, error) {
	if bw, ok := w.(membody.BuffersWriter); ok {
		return bw.WriteBuffers(v)
	}
	return v.WriteTo(w)
}

// Read is the framed body as a reader (what fasthttp falls back on).
func (f *frameWriter) Read(p []byte) (int, error) {
	for len(f.pending) == 0 {
		if f.left == 0 {
			return 0, io.EOF
		}
		if err := f.frame(1); err != nil {
			return 0, err
		}
	}
	n := copy(p, f.pending[0])
	f.pending[0] = f.pending[0][n:]
	if len(f.pending[0]) == 0 {
		f.pending = f.pending[1:]
	}
	return n, nil
}

// Close closes the chunk's source if it is a closer (a file).
// Close ends the connection's hold of the headers (see membody.Stream)
// and closes the source.
func (f *frameWriter) Close() error {
	err := membody.Release(f.conn)
	if c, ok := f.src.(io.Closer); ok {
		if cerr := c.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// frameReader is a chunk answer's body as the asker reads it: left
// payload bytes, each frame's returned only once its tag matched. A
// frame is read into the caller's buffer when it holds one (the flight's
// buffer: no copy), else into buf. A frame that does not match fails
// with ErrBadAnswer, a body that ends early with io.ErrUnexpectedEOF;
// then every Read fails.
type frameReader struct {
	rc    io.ReadCloser
	key   answerKey
	peer  string
	left  int64  // payload bytes not read yet
	i     uint64 // the next frame's index
	buf   []byte // a frame too large for the caller's buffer
	ready []byte // what is left of buf, checked, not returned yet
	tag   [TagSize]byte
	err   error
}

func (f *frameReader) Read(p []byte) (int, error) {
	if len(f.ready) > 0 {
		n := copy(p, f.ready)
		f.ready = f.ready[n:]
		return n, nil
	}
	switch {
	case f.err != nil:
		return 0, f.err
	case f.left == 0:
		return 0, io.EOF
	case len(p) == 0:
		return 0, nil
	}
	n := int(min(int64(FrameSize), f.left))
	if len(p) >= n {
		if f.err = f.frame(p[:n], p[n:]); f.err != nil {
			return 0, f.err
		}
		return n, nil
	}
	if f.buf == nil {
		f.buf = make([]byte, n)
	}
	if f.err = f.frame(f.buf[:n], nil); f.err != nil {
		return 0, f.err
	}
	f.ready = f.buf[:n]
	return f.Read(p)
}

// frame reads the next frame's payload into p (its length) and its tag,
// and checks them. If spare (what follows p in the caller's buffer,
// which io.Reader lets a Read use as scratch) has room for the tag, the
// payload and the tag come in one read.
func (f *frameReader) frame(p, spare []byte) error {
	if len(spare) >= TagSize {
		if _, err := io.ReadFull(f.rc, p[:len(p)+TagSize]); err != nil {
			return f.cut(err)
		}
		copy(f.tag[:], p[len(p):len(p)+TagSize])
	} else {
		if _, err := io.ReadFull(f.rc, p); err != nil {
			return f.cut(err)
		}
		if _, err := io.ReadFull(f.rc, f.tag[:]); err != nil {
			return f.cut(err)
		}
	}
	f.left -= int64(len(p))
	want := f.key.frameTag(f.i, f.left == 0, p)
	if subtle.ConstantTimeCompare(want[:], f.tag[:]) != 1 {
		return fmt.Errorf("peer %s: chunk frame %d does not match its tag: %w", f.peer, f.i, ErrBadAnswer)
	}
	f.i++
	return nil
}

// cut is the error of a body that failed in frame i: one that ended is
// io.ErrUnexpectedEOF.
func (f *frameReader) cut(err error) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("peer %s: chunk answer cut in frame %d: %w", f.peer, f.i, err)
}

func (f *frameReader) Close() error { return f.rc.Close() }
