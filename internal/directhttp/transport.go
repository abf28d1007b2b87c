// Package directhttp is an HTTP/1.1 transport for bodiless GETs whose
// round trip runs in the caller's goroutine, on a connection kept for
// the next call, with no goroutine of its own. Go's http.Transport hands
// every request to a writer goroutine and every answer back from a reader
// goroutine: on a peer hop (a chunk relayed for a client) those hand-offs
// were a sixth of the relaying node's CPU. Any other request (a body, a
// proxy) goes through an http.Transport.
package directhttp

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// MaxIdlePerHost is how many connections are kept per address.
	MaxIdlePerHost = 64
	// IdleFor is how long a kept connection may wait for its next call:
	// under Granary's own server's idle timeout (api.DefaultIdleTimeout).
	IdleFor = 90 * time.Second
	connBuf = 16 << 10 // each connection's read and write buffers
)

// Transport is an http.RoundTripper for bodiless GETs over HTTP/1.1
// (HTTPS with TLS); any other request goes to Other, as does every
// request Other's Proxy sends through a proxy. Safe for concurrent use.
type Transport struct {
	Dial          func(ctx context.Context, network, addr string) (net.Conn, error)
	TLS           *tls.Config   // for https (nil: Other's TLSClientConfig, else the defaults)
	HeaderTimeout time.Duration // the wait for an answer's head (0: none)
	Other         *http.Transport

	mu    sync.Mutex
	idle  map[string][]*pconn // by scheme and address, most recently used last
	hosts map[string]*tls.Config
	swept time.Time // the last sweep of connections idle too long
}

// pconn is a connection with its buffers; it serves one call at a time.
type pconn struct {
	net.Conn
	br   *bufio.Reader
	bw   *bufio.Writer
	used time.Time // when it went idle
}

// errStale marks a failure on a kept connection before any byte of the
// answer arrived: the member closed it while idle, so the call is tried
// again on a new one.
var errStale = errors.New("kept connection closed")

// RoundTrip sends req and reads the head of its answer in the caller's
// goroutine; the answer's body reads from the connection, which goes
// back to the pool once the body has been read whole.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.direct(req) {
		return t.Other.RoundTrip(req)
	}
	for {
		// A context already done fails here: its watch on the
		// connection (exchange) runs on a goroutine of its own, which
		// a fast answer could beat.
		if err := req.Context().Err(); err != nil {
			return nil, err
		}
		pc, kept, err := t.get(req.Context(), req.URL.Scheme, req.URL.Host)
		if err != nil {
			return nil, err
		}
		resp, err := t.exchange(pc, req)
		if err == nil {
			return resp, nil
		}
		pc.Close()
		if !kept || !errors.Is(err, errStale) {
			return nil, err
		}
	}
}

// direct reports whether req goes directly: a bodiless GET over HTTP or
// HTTPS, not through a proxy.
func (t *Transport) direct(req *http.Request) bool {
	if req.Method != http.MethodGet || (req.Body != nil && req.Body != http.NoBody) {
		return false
	}
	if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		return false
	}
	if t.Other.Proxy != nil {
		if u, err := t.Other.Proxy(req); err != nil || u != nil {
			return false
		}
	}
	return true
}

// exchange sends req on pc and reads its answer's head. On failure the
// caller closes pc.
func (t *Transport) exchange(pc *pconn, req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	stop := context.AfterFunc(ctx, func() { pc.SetDeadline(time.Unix(1, 0)) })
	fail := func(err error) (*http.Response, error) {
		stop()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		return nil, err
	}
	if err := writeHead(pc.bw, req); err != nil {
		return fail(staleIf(err))
	}
	if err := pc.bw.Flush(); err != nil {
		return fail(staleIf(err))
	}
	if t.HeaderTimeout > 0 {
		pc.SetReadDeadline(time.Now().Add(t.HeaderTimeout))
	}
	if _, err := pc.br.Peek(1); err != nil {
		return fail(staleIf(err))
	}
	resp, err := http.ReadResponse(pc.br, req)
	if err != nil {
		return fail(err)
	}
	pc.SetReadDeadline(time.Time{})
	resp.Body = &pooledBody{rc: resp.Body, pc: pc, t: t, ctx: ctx, stop: stop,
		left: resp.ContentLength, keep: !resp.Close, key: req.URL.Scheme + "://" + req.URL.Host}
	return resp, nil
}

// staleIf marks err with errStale if it says the connection was closed
// (its end read, a reset, a broken pipe) rather than that it timed out:
// a kept connection that fails so before the answer's first byte was
// closed by the member while idle. A timeout is never retried.
func staleIf(err error) error {
	var op *net.OpError
	closed := errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || (errors.As(err, &op) && !op.Timeout())
	if closed {
		return fmt.Errorf("%w: %w", errStale, err)
	}
	return err
}

// get returns a kept connection to addr over scheme (kept true) or a new
// one.
func (t *Transport) get(ctx context.Context, scheme, addr string) (*pconn, bool, error) {
	key := scheme + "://" + addr
	now := time.Now()
	t.mu.Lock()
	for q := t.idle[key]; len(q) > 0; q = t.idle[key] {
		pc := q[len(q)-1]
		t.idle[key] = q[:len(q)-1]
		if now.Sub(pc.used) < IdleFor {
			t.mu.Unlock()
			return pc, true, nil
		}
		pc.Close()
	}
	t.mu.Unlock()
	pc, err := t.connect(ctx, scheme, addr)
	return pc, false, err
}

// connect dials addr, over TLS for https.
func (t *Transport) connect(ctx context.Context, scheme, addr string) (*pconn, error) {
	if _, _, err := net.SplitHostPort(addr); err != nil { // no port: the scheme's
		port := "80"
		if scheme == "https" {
			port = "443"
		}
		addr = net.JoinHostPort(addr, port)
	}
	c, err := t.Dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if scheme == "https" {
		tc := tls.Client(c, t.hostTLS(addr))
		hctx, cancel := context.WithTimeout(ctx, t.handshakeTimeout())
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			c.Close()
			return nil, err
		}
		c = tc
	}
	return &pconn{Conn: c, br: bufio.NewReaderSize(c, connBuf), bw: bufio.NewWriterSize(c, connBuf)}, nil
}

// handshakeTimeout bounds a TLS handshake: Other's bound, else the
// head's, else 10 s.
func (t *Transport) handshakeTimeout() time.Duration {
	switch {
	case t.Other.TLSHandshakeTimeout > 0:
		return t.Other.TLSHandshakeTimeout
	case t.HeaderTimeout > 0:
		return t.HeaderTimeout
	}
	return 10 * time.Second
}

// hostTLS is t's TLS configuration for addr: its server name is the
// address's host, as http.Transport sets it.
func (t *Transport) hostTLS(addr string) *tls.Config {
	t.mu.Lock()
	defer t.mu.Unlock()
	if cfg, ok := t.hosts[addr]; ok {
		return cfg
	}
	cfg := t.TLS
	if cfg == nil {
		cfg = t.Other.TLSClientConfig
	}
	if cfg = cfg.Clone(); cfg == nil {
		cfg = &tls.Config{}
	}
	if cfg.ServerName == "" {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		cfg.ServerName = host
	}
	if t.hosts == nil {
		t.hosts = map[string]*tls.Config{}
	}
	t.hosts[addr] = cfg
	return cfg
}

// put keeps pc for the next call to key (scheme and address), or
// closes it.
func (t *Transport) put(key string, pc *pconn) {
	if pc.br.Buffered() > 0 { // bytes past the answer: not a connection to reuse
		pc.Close()
		return
	}
	now := time.Now()
	pc.used = now
	var old []*pconn
	t.mu.Lock()
	if len(t.idle[key]) < MaxIdlePerHost {
		if t.idle == nil {
			t.idle = map[string][]*pconn{}
		}
		t.idle[key] = append(t.idle[key], pc)
		pc = nil
	}
	if now.Sub(t.swept) > IdleFor/4 {
		t.swept = now
		old = t.expired(now)
	}
	t.mu.Unlock()
	if pc != nil {
		old = append(old, pc)
	}
	for _, c := range old {
		c.Close()
	}
}

// expired removes and returns the connections idle for IdleFor or more,
// of every address (a member gone leaves none open for long). Called
// with t.mu held.
func (t *Transport) expired(now time.Time) []*pconn {
	var old []*pconn
	for key, q := range t.idle {
		n := 0
		for n < len(q) && now.Sub(q[n].used) >= IdleFor { // oldest first
			n++
		}
		old = append(old, q[:n]...)
		if n == len(q) {
			delete(t.idle, key)
		} else {
			t.idle[key] = q[n:]
		}
	}
	return old
}

// CloseIdleConnections closes every kept connection, and Other's.
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = nil
	t.mu.Unlock()
	for _, q := range idle {
		for _, pc := range q {
			pc.Close()
		}
	}
	t.Other.CloseIdleConnections()
}

// pooledBody is an answer's body on a connection of t's: read whole (its
// length reached, or its end seen), the connection goes back to the
// pool; closed before that, it is closed. Close may race a blocked Read
// (a caller's stall watch), which it unblocks.
type pooledBody struct {
	rc   io.ReadCloser
	pc   *pconn
	t    *Transport
	ctx  context.Context
	stop func() bool // the context's watch on pc
	key  string      // pc's scheme and address
	left int64       // bytes of the body not read yet; -1: unknown
	keep bool        // the member keeps the connection open
	done atomic.Bool
}

func (b *pooledBody) Read(p []byte) (int, error) {
	if b.left == 0 {
		b.finish(true)
		return 0, io.EOF
	}
	n, err := b.rc.Read(p)
	if b.left > 0 {
		b.left -= int64(n)
	}
	switch {
	case err == io.EOF || (err == nil && b.left == 0):
		b.finish(true)
	case err != nil:
		b.finish(false)
		if b.ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", b.ctx.Err(), err)
		}
	}
	return n, err
}

// Close closes the connection unless the body was read whole.
func (b *pooledBody) Close() error {
	b.finish(false)
	return nil
}

// finish releases the connection once: to the pool if whole and the
// context never touched it, else closed.
func (b *pooledBody) finish(whole bool) {
	if !b.done.CompareAndSwap(false, true) {
		return
	}
	if b.stop() && whole && b.keep {
		b.t.put(b.key, b.pc)
		return
	}
	b.pc.Close()
}
