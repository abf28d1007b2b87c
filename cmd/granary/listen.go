// The S3 listener: bound from --listen, or handed over by a service
// manager (systemd socket activation: LISTEN_FDS=1 for this process's
// LISTEN_PID, the socket at file descriptor 3).
package main

import (
	"fmt"
	"net"
	"os"
	"strconv"
)

// activatedFD is the first descriptor a service manager passes.
const activatedFD = 3

// listen returns the node's S3 listener: the activated socket if the
// environment passes this process one, else a new one on addr.
func listen(addr string, getenv func(string) (string, bool)) (net.Listener, error) {
	fds, _ := getenv("LISTEN_FDS")
	pid, _ := getenv("LISTEN_PID")
	if fds == "" || pid != strconv.Itoa(os.Getpid()) {
		// Not for this process (a child inherits the variables of its
		// parent's activation): bind addr.
		return net.Listen("tcp", addr)
	}
	if fds != "1" {
		return nil, fmt.Errorf("LISTEN_FDS=%s: granary serves one socket", fds)
	}
	f := os.NewFile(activatedFD, "activated socket")
	defer f.Close() // FileListener holds its own descriptor
	ln, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("activated socket (fd %d): %w", activatedFD, err)
	}
	return ln, nil
}
