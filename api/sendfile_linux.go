//go:build linux

// Bodies the kernel sends from a file: a connection's held head goes with
// MSG_MORE (it leaves in the body's first segment) and the body with
// sendfile, which hands the socket the file's pages by reference instead
// of copying them (membody.FileSender).
//
// Sending the head at once instead, as nginx does without tcp_nopush,
// cost the node less kernel time with wrk as the client, but more CPU
// per GET in the reads scenario, whose client is Go (README, "Sending
// the head at once").
package api

import (
	"errors"
	"io"
	"syscall"

	"golang.org/x/sys/unix"
)

// SendFile sends what Hold kept, then n bytes of the file fd from off.
// It returns how many of the file's bytes it sent; errors.ErrUnsupported,
// having done nothing, on a connection with no socket of its own (TLS).
func (c *trackedConn) SendFile(fd uintptr, off int64, n int) (int64, error) {
	raw := c.rawConn()
	if raw == nil {
		return 0, errors.ErrUnsupported
	}
	head := c.held
	c.hold, c.held = false, c.held[:0]
	if c.silent.Load() {
		return int64(n), nil
	}
	s := &c.send.cur
	*s = fileSend{head: head, fd: int(fd), off: off, left: n}
	if c.send.step == nil {
		c.send.step = s.step
	}
	err := raw.Write(c.send.step)
	s.head = nil // the held buffer is the connection's again
	if err != nil {
		return s.sent, err // the write deadline passed, or the socket closed
	}
	return s.sent, s.err
}

// rawConn returns the connection's socket, nil if it has none of its own
// (TLS); asked of the connection once.
func (c *trackedConn) rawConn() syscall.RawConn {
	if c.send.raw == nil {
		sc, ok := c.Conn.(syscall.Conn)
		if !ok {
			return nil
		}
		raw, err := sc.SyscallConn()
		if err != nil {
			return nil
		}
		c.send.raw = raw
	}
	return c.send.raw
}

// fileSends is a connection's SendFile working memory, kept so that a
// send allocates nothing: its socket, the send under way, and that
// send's step for the poller, bound once.
type fileSends struct {
	raw  syscall.RawConn
	cur  fileSend
	step func(uintptr) bool // cur.step
}

// fileSend is one SendFile's progress, which step carries on with each
// time the socket is writable.
type fileSend struct {
	head []byte
	fd   int
	off  int64
	left int
	sent int64
	err  error
}

// step sends what it can of the head, then of the file, to the socket s;
// false when s is full (the poller waits for room and calls it again).
func (f *fileSend) step(s uintptr) bool {
	for len(f.head) > 0 || f.left > 0 {
		var err error
		if len(f.head) > 0 {
			var n int
			if n, err = unix.SendmsgN(int(s), f.head, nil, nil, unix.MSG_MORE|unix.MSG_NOSIGNAL); err == nil {
				f.head = f.head[n:]
			}
		} else {
			var n int
			n, err = unix.Sendfile(int(s), f.fd, &f.off, f.left)
			if n > 0 {
				f.left -= n
				f.sent += int64(n)
			} else if err == nil {
				err = io.ErrUnexpectedEOF // the file ended: never past a chunk in it
			}
		}
		switch err {
		case nil, unix.EINTR:
		case unix.EAGAIN:
			return false
		default:
			f.err = err
			return true
		}
	}
	return true
}
