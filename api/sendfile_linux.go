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
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return 0, errors.ErrUnsupported
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return 0, errors.ErrUnsupported
	}
	head := c.held
	c.hold, c.held = false, c.held[:0]
	if c.silent.Load() {
		return int64(n), nil
	}
	s := fileSend{head: head, fd: int(fd), off: off, left: n}
	if err := raw.Write(s.step); err != nil {
		return s.sent, err // the write deadline passed, or the socket closed
	}
	return s.sent, s.err
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
