// The transport for a member's GETs: each round trip runs in the caller's
// goroutine, on a connection kept for the next call, with no goroutine
// of its own. Go's http.Transport hands every request to a writer
// goroutine and every answer back from a reader goroutine: on a peer hop
// (a chunk relayed for a client) those hand-offs were a sixth of the
// relaying node's CPU. Calls with a body (writes) still go through it.
package peer

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
	maxIdlePerHost = 64               // connections kept per member
	idleFor        = 90 * time.Second // under the server's idle timeout (api.DefaultIdleTimeout)
	connBuf        = 16 << 10         // each connection's read and write buffers
)

// direct is an http.RoundTripper for bodiless GETs; any other call goes
// to other. Safe for concurrent use.
type direct struct {
	dial    func(ctx context.Context, network, addr string) (net.Conn, error)
	tls     *tls.Config   // nil: plain HTTP
	timeout time.Duration // the wait for an answer's head
	other   *http.Transport

	mu    sync.Mutex
	idle  map[string][]*pconn // by address, most recently used last
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
func (t *direct) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet || req.Body != nil {
		return t.other.RoundTrip(req)
	}
	for {
		pc, kept, err := t.get(req.Context(), req.URL.Host)
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

// exchange sends req on pc and reads its answer's head. On failure the
// caller closes pc.
func (t *direct) exchange(pc *pconn, req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	stop := context.AfterFunc(ctx, func() { pc.SetDeadline(time.Unix(1, 0)) })
	fail := func(err error) (*http.Response, error) {
		stop()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		return nil, err
	}
	if err := req.Write(pc.bw); err != nil {
		return fail(fmt.Errorf("%w: %v", errStale, err))
	}
	if err := pc.bw.Flush(); err != nil {
		return fail(fmt.Errorf("%w: %v", errStale, err))
	}
	pc.SetReadDeadline(time.Now().Add(t.timeout))
	if _, err := pc.br.Peek(1); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || isReset(err) {
			err = fmt.Errorf("%w: %v", errStale, err)
		}
		return fail(err)
	}
	resp, err := http.ReadResponse(pc.br, req)
	if err != nil {
		return fail(err)
	}
	pc.SetReadDeadline(time.Time{})
	resp.Body = &pooledBody{rc: resp.Body, pc: pc, t: t, ctx: ctx, stop: stop,
		left: resp.ContentLength, keep: !resp.Close, host: req.URL.Host}
	return resp, nil
}

// isReset reports whether err is a connection reset (a member that closed
// a kept connection with bytes unread).
func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && !op.Timeout()
}

// get returns a kept connection to addr (kept true) or a new one.
func (t *direct) get(ctx context.Context, addr string) (*pconn, bool, error) {
	now := time.Now()
	t.mu.Lock()
	for q := t.idle[addr]; len(q) > 0; q = t.idle[addr] {
		pc := q[len(q)-1]
		t.idle[addr] = q[:len(q)-1]
		if now.Sub(pc.used) < idleFor {
			t.mu.Unlock()
			return pc, true, nil
		}
		pc.Close()
	}
	t.mu.Unlock()
	pc, err := t.connect(ctx, addr)
	return pc, false, err
}

// connect dials addr, over TLS if t speaks it.
func (t *direct) connect(ctx context.Context, addr string) (*pconn, error) {
	c, err := t.dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if t.tls != nil {
		tc := tls.Client(c, t.hostTLS(addr))
		hctx, cancel := context.WithTimeout(ctx, t.timeout)
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

// hostTLS is t's TLS configuration for addr: its server name is the
// address's host, as http.Transport sets it.
func (t *direct) hostTLS(addr string) *tls.Config {
	t.mu.Lock()
	defer t.mu.Unlock()
	if cfg, ok := t.hosts[addr]; ok {
		return cfg
	}
	cfg := t.tls.Clone()
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

// put keeps pc for the next call to addr, or closes it.
func (t *direct) put(addr string, pc *pconn) {
	if pc.br.Buffered() > 0 { // bytes past the answer: not a connection to reuse
		pc.Close()
		return
	}
	now := time.Now()
	pc.used = now
	var old []*pconn
	t.mu.Lock()
	if len(t.idle[addr]) < maxIdlePerHost {
		if t.idle == nil {
			t.idle = map[string][]*pconn{}
		}
		t.idle[addr] = append(t.idle[addr], pc)
		pc = nil
	}
	if now.Sub(t.swept) > idleFor/4 {
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

// expired removes and returns the connections idle for idleFor or more,
// of every address (a member gone leaves none open for long). Called
// with t.mu held.
func (t *direct) expired(now time.Time) []*pconn {
	var old []*pconn
	for addr, q := range t.idle {
		n := 0
		for n < len(q) && now.Sub(q[n].used) >= idleFor { // oldest first
			n++
		}
		old = append(old, q[:n]...)
		if n == len(q) {
			delete(t.idle, addr)
		} else {
			t.idle[addr] = q[n:]
		}
	}
	return old
}

// closeIdle closes every kept connection.
func (t *direct) closeIdle() {
	t.mu.Lock()
	idle := t.idle
	t.idle = nil
	t.mu.Unlock()
	for _, q := range idle {
		for _, pc := range q {
			pc.Close()
		}
	}
	t.other.CloseIdleConnections()
}

// pooledBody is an answer's body on a connection of t's: read whole (its
// length reached, or its end seen), the connection goes back to the
// pool; closed before that, it is closed. Close may race a blocked Read
// (a caller's stall watch), which it unblocks.
type pooledBody struct {
	rc   io.ReadCloser
	pc   *pconn
	t    *direct
	ctx  context.Context
	stop func() bool // the context's watch on pc
	host string
	left int64 // bytes of the body not read yet; -1: unknown
	keep bool  // the member keeps the connection open
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
		b.t.put(b.host, b.pc)
		return
	}
	b.pc.Close()
}
