// Mounting without root: fusermount3 (setuid) opens /dev/fuse, mounts it
// and passes the descriptor back over a socket (_FUSE_COMMFD), as go-fuse
// does for its own mounts; here the caller keeps the descriptor.
package fuse

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// viaFusermount makes Connect use fusermount3 even as root (tests).
var viaFusermount = false

// fusermount mounts dir with mo's options through fusermount3 and returns
// the connection's descriptor.
func fusermount(dir string, mo *fuse.MountOptions) (*os.File, error) {
	bin, err := exec.LookPath("fusermount3")
	if err != nil {
		return nil, fmt.Errorf("fuse: mounting without root needs fusermount3: %w", err)
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("fuse: %w", err)
	}
	local, remote := os.NewFile(uintptr(pair[0]), "fusermount"), os.NewFile(uintptr(pair[1]), "fusermount-remote")
	defer local.Close()
	opts := append([]string{"fsname=" + mo.FsName, "subtype=" + mo.Name, "max_read=" + strconv.Itoa(mo.MaxWrite)}, mo.Options...)
	if mo.AllowOther {
		opts = append(opts, "allow_other")
	}
	cmd := exec.Command(bin, "-o", strings.Join(opts, ","), "--", dir)
	cmd.ExtraFiles = []*os.File{remote}
	cmd.Env = append(os.Environ(), "_FUSE_COMMFD=3")
	out, err := cmd.CombinedOutput()
	remote.Close()
	if err != nil {
		return nil, fmt.Errorf("fuse: fusermount3: %w: %s", err, strings.TrimSpace(string(out)))
	}
	fd, err := receiveFD(int(local.Fd()))
	if err != nil {
		return nil, fmt.Errorf("fuse: fusermount3 passed no descriptor: %w", err)
	}
	unix.CloseOnExec(fd)
	return os.NewFile(uintptr(fd), "/dev/fuse"), nil
}

// receiveFD reads one message carrying one descriptor from sock.
func receiveFD(sock int) (int, error) {
	var data [4]byte
	oob := make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, err := unix.Recvmsg(sock, data[:], oob, 0)
	if err != nil {
		return -1, err
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return -1, err
	}
	if len(msgs) != 1 {
		return -1, errors.New("no control message")
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil {
		return -1, err
	}
	if len(fds) != 1 {
		for _, fd := range fds {
			syscall.Close(fd)
		}
		return -1, fmt.Errorf("%d descriptors", len(fds))
	}
	return fds[0], nil
}
