// The supervisor's FUSE session: it mounts on a connection it keeps
// (fuse.Connect) and hands it to each worker, so that a worker's death
// costs the trainer a pause, not its open files. After a death it asks
// the kernel to resend what the dead worker had taken but not answered.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/granary-dev/granary/fuse"
)

// workerSessionFD is the worker's descriptor for the connection: the
// second of exec.Cmd's ExtraFiles, after the ready pipe.
const workerSessionFD = workerReadyFD + 1

// session is a connection the supervisor holds, and its workers' count.
type session struct {
	conn  *fuse.Conn
	dir   string
	state string // the directory for the saved INIT and the node journal
	gen   int
}

// openSession mounts opts' bucket at dir on a connection this process
// keeps: directly as root, else through fusermount3. Where that fails
// for a user other than root, it returns nil and says so: the workers
// then mount themselves, and a restart remounts.
func openSession(dir string, opts fuse.Options, resend bool, w io.Writer) (*session, error) {
	state, err := os.MkdirTemp("", "granary-mount-")
	if err != nil {
		return nil, fmt.Errorf("supervisor: %w", err)
	}
	conn, err := fuse.Connect(dir, state, opts)
	if err != nil {
		os.RemoveAll(state)
		if os.Geteuid() != 0 {
			fmt.Fprintf(w, "granary: supervisor: %v: a restarted worker remounts %s, and files open then must be reopened\n", err, dir)
			return nil, nil
		}
		return nil, fmt.Errorf("supervisor: %w", err)
	}
	if !resend {
		conn.NoResend()
	}
	return &session{conn: conn, dir: dir, state: state}, nil
}

// worker returns the next worker's command line and extra files: args
// with the session's flags, or args alone without a session.
func (s *session) worker(args []string) ([]string, []*os.File) {
	if s == nil {
		return args, nil
	}
	s.gen++
	wargs := append([]string{args[0], "--session-fd=" + strconv.Itoa(workerSessionFD),
		"--session-dir=" + s.state, "--session-gen=" + strconv.Itoa(s.gen)}, args[1:]...)
	return wargs, []*os.File{s.conn.File()}
}

// carryOn readies the connection for the next worker once one died:
// the kernel resends to it what the dead one had taken. Where it cannot
// (a kernel before 6.9), each of those requests is answered EINTR (its
// caller retries, now served by the next worker). If neither works, the
// session ends (waiting requests fail with ENOTCONN) and nil is
// returned: the next worker mounts anew.
func (s *session) carryOn(w io.Writer) *session {
	if s == nil {
		return nil
	}
	err := s.conn.Resend()
	if err == nil {
		return s
	}
	if errors.Is(err, fuse.ErrNoResend) {
		n, ierr := s.conn.Interrupt()
		if ierr == nil {
			fmt.Fprintf(w, "granary: supervisor: %v: answered the %d request(s) the dead worker had taken with EINTR\n", err, n)
			return s
		}
		err = ierr
	}
	fmt.Fprintf(w, "granary: supervisor: %v; remounting: files open now must be reopened\n", err)
	s.close(w)
	return nil
}

// close ends the session: the mount is detached, waiting requests fail.
func (s *session) close(w io.Writer) {
	if s == nil {
		return
	}
	if err := s.conn.Close(); err != nil {
		fmt.Fprintf(w, "granary: supervisor: %v\n", err)
	}
	os.RemoveAll(s.state)
}
