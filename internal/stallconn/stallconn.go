// Package stallconn bounds how long a connection's write may make no
// progress: a peer or an origin that stops reading (a hung process whose
// kernel still holds the connection open, a black-holed route) fails the
// write after the stall timeout instead of blocking it forever, however
// long the whole transfer takes while bytes keep moving.
package stallconn

import (
	"context"
	"net"
	"time"
)

// Conn fails a Write that makes no progress for D.
type Conn struct {
	net.Conn
	D time.Duration
}

// Write writes p with a deadline D from now: each call to Write (one per
// buffer the transport flushes) must complete within D.
func (c *Conn) Write(p []byte) (int, error) {
	if err := c.Conn.SetWriteDeadline(time.Now().Add(c.D)); err != nil {
		return 0, err
	}
	return c.Conn.Write(p)
}

// Dial returns a DialContext for an http.Transport whose connections,
// dialed with d, fail writes that stall for stall.
func Dial(d *net.Dialer, stall time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &Conn{Conn: c, D: stall}, nil
	}
}
