// Package faultproxy is a TCP proxy in front of a real server (MinIO in
// tests and the loadtest) that can turn, on the same address, into the
// faults an origin shows on a bad day: a hung origin (accepts TCP, never
// answers), one that sends its response headers and then stalls the body,
// and a refused port; or an on-path attacker that flips a byte of each
// answer it relays (FlipBodies). Turning hung black-holes the open connections too (a
// wedged route: what they carry goes nowhere); every other change of mode
// drops them, so a client's pooled connections see the new mode.
package faultproxy

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
)

// Mode is what the proxy does with a connection.
type Mode int

const (
	Forward   Mode = iota // relay to the upstream server
	Hang                  // accept, read the request, never answer
	StallBody             // relay the request, and of the answer only its headers
	Refuse                // no listener: connections are refused
	// FlipBodies relays, flipping one byte in the middle of the body of
	// each HTTP/1.1 answer of FlipMin bytes or more (small answers, a
	// ping or a refusal, pass as they are).
	FlipBodies
)

// FlipMin is the least body FlipBodies changes.
const FlipMin = 32 << 10

func (m Mode) String() string {
	return [...]string{"forward", "hang", "stall-body", "refuse", "flip-bodies"}[m]
}

// Proxy relays connections to one upstream address, or fails them as its
// mode says. Close ends every goroutine it started.
type Proxy struct {
	upstream string
	addr     string

	mu     sync.Mutex // guards mode, ln, conns and closed
	mode   Mode
	ln     net.Listener // nil while refusing
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup // accept loops and connection handlers
	// flipped counts the answers FlipBodies changed.
	flipped atomic.Int64
}

// Start listens on a loopback port and relays to upstream (host:port).
func Start(upstream string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{upstream: upstream, addr: ln.Addr().String(), ln: ln, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept(ln)
	return p, nil
}

// Flipped is how many answers FlipBodies changed so far.
func (p *Proxy) Flipped() int64 { return p.flipped.Load() }

// Addr is the address clients connect to; it stays the same across modes.
func (p *Proxy) Addr() string { return p.addr }

// Set switches to mode m: open connections hang (Hang) or are dropped;
// Refuse closes the listener, any other mode listens again on the same
// address.
func (p *Proxy) Set(m Mode) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return net.ErrClosed
	}
	p.mode = m
	if m != Hang {
		p.dropLocked()
	}
	switch {
	case m == Refuse && p.ln != nil:
		p.ln.Close()
		p.ln = nil
	case m != Refuse && p.ln == nil:
		ln, err := net.Listen("tcp", p.addr)
		if err != nil {
			return err
		}
		p.ln = ln
		p.wg.Add(1)
		go p.accept(ln)
	}
	return nil
}

// Close stops listening, drops every connection and waits for the
// proxy's goroutines.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	p.dropLocked()
	p.mu.Unlock()
	p.wg.Wait()
	return nil
}

func (p *Proxy) dropLocked() {
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// track registers c (so a change of mode drops it) and returns the mode
// it is served in; false if the proxy closed.
func (p *Proxy) track(c net.Conn) (Mode, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return 0, false
	}
	p.conns[c] = struct{}{}
	return p.mode, true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

func (p *Proxy) accept(ln net.Listener) {
	defer p.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		mode, ok := p.track(c)
		if !ok {
			c.Close()
			return
		}
		p.wg.Add(1)
		go p.serve(c, mode)
	}
}

// serve handles one client connection in mode until either side ends it
// or the proxy drops it.
func (p *Proxy) serve(c net.Conn, mode Mode) {
	defer p.wg.Done()
	defer p.untrack(c)
	if mode == Hang {
		// Swallow the request, never answer, until either side closes.
		io.Copy(io.Discard, c)
		return
	}
	up, err := net.Dial("tcp", p.upstream)
	if err != nil {
		return
	}
	if _, ok := p.track(up); !ok {
		up.Close()
		return
	}
	defer p.untrack(up)
	var relay sync.WaitGroup
	relay.Add(1)
	go func() {
		defer relay.Done()
		p.relay(up, c)
		up.Close()
	}()
	switch mode {
	case StallBody:
		copyHeaders(c, up)
		relay.Wait() // the rest never comes: hold until either side closes
	case FlipBodies:
		p.flipAnswers(c, up)
	default:
		p.relay(c, up)
	}
	c.Close()
	relay.Wait()
}

// relay copies src to dst until either fails; while the proxy hangs, what
// arrives is dropped.
func (p *Proxy) relay(dst io.Writer, src io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.hanging() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *Proxy) hanging() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode == Hang
}

// flipAnswers relays HTTP/1.1 answers from src to dst, one after the
// other, flipping the middle byte of each body of FlipMin bytes or more.
// From an answer without a Content-Length on, it relays as it is.
func (p *Proxy) flipAnswers(dst io.Writer, src io.Reader) {
	br := bufio.NewReaderSize(src, 64<<10)
	for {
		head, err := readHead(br)
		if len(head) > 0 {
			if _, werr := dst.Write(head); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
		n, ok := contentLength(head)
		if !ok {
			p.relay(dst, br)
			return
		}
		if n >= FlipMin {
			p.flipped.Add(1)
		}
		if err := copyFlipped(dst, br, n); err != nil {
			return
		}
	}
}

// readHead reads an answer's status line and headers, through the empty
// line that ends them.
func readHead(br *bufio.Reader) ([]byte, error) {
	var head []byte
	for {
		line, err := br.ReadSlice('\n')
		head = append(head, line...)
		if err != nil {
			return head, err
		}
		if len(line) <= 2 && len(head) > len(line) { // "\r\n" after the headers
			return head, nil
		}
	}
}

// contentLength is head's Content-Length, if it has one and no
// Transfer-Encoding.
func contentLength(head []byte) (int64, bool) {
	n, ok := int64(-1), true
	for _, line := range bytes.Split(head, []byte("\r\n")) {
		name, value, found := bytes.Cut(line, []byte(":"))
		switch {
		case !found:
		case bytes.EqualFold(bytes.TrimSpace(name), []byte("Transfer-Encoding")):
			ok = false
		case bytes.EqualFold(bytes.TrimSpace(name), []byte("Content-Length")):
			v, err := strconv.ParseInt(string(bytes.TrimSpace(value)), 10, 64)
			if err != nil {
				ok = false
			}
			n = v
		}
	}
	return n, ok && n >= 0
}

// copyFlipped copies a body of n bytes from src to dst, its middle byte
// flipped if n is FlipMin or more.
func copyFlipped(dst io.Writer, src io.Reader, n int64) error {
	if n < FlipMin {
		_, err := io.CopyN(dst, src, n)
		return err
	}
	if _, err := io.CopyN(dst, src, n/2); err != nil {
		return err
	}
	var b [1]byte
	if _, err := io.ReadFull(src, b[:]); err != nil {
		return err
	}
	b[0] ^= 0x01
	if _, err := dst.Write(b[:]); err != nil {
		return err
	}
	_, err := io.CopyN(dst, src, n-n/2-1)
	return err
}

// copyHeaders relays the answer up to the end of its first header block.
func copyHeaders(dst io.Writer, src io.Reader) {
	var seen []byte
	buf := make([]byte, 4096)
	for {
		n, err := src.Read(buf)
		if end := bytes.Index(append(seen, buf[:n]...), []byte("\r\n\r\n")); end >= 0 {
			dst.Write(buf[:end+4-len(seen)])
			return
		}
		dst.Write(buf[:n])
		seen = append(seen, buf[:n]...)
		if err != nil {
			return
		}
	}
}

// FlipAt returns r with the byte at offset at changed: what an on-path
// attacker does to a request body, for a transport a test puts in front
// of a client.
func FlipAt(r io.Reader, at int64) io.Reader { return &flipReader{r: r, at: at} }

// FlipBody is FlipAt for a request's body: closing it closes rc.
func FlipBody(rc io.ReadCloser, at int64) io.ReadCloser {
	return struct {
		io.Reader
		io.Closer
	}{FlipAt(rc, at), rc}
}

type flipReader struct {
	r   io.Reader
	at  int64
	off int64
}

func (f *flipReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if i := f.at - f.off; i >= 0 && i < int64(n) {
		p[i] ^= 0x20
	}
	f.off += int64(n)
	return n, err
}
