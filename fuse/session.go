// A FUSE connection that outlives its worker: the supervisor opens
// /dev/fuse, mounts and answers the kernel's INIT once, and keeps the
// descriptor; each worker inherits it, puts go-fuse in the initialized
// state by replaying the saved INIT, and serves. When a worker dies, the
// supervisor asks the kernel to resend what the worker had read but not
// answered (FUSE_NOTIFY_RESEND, Linux 6.9+), and the next worker serves
// it, or on older kernels answers those EINTR (inflight.go): the kernel
// holds requests while no worker runs.
package fuse

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"syscall"
	"unsafe"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

const (
	opInit = 26 // FUSE_INIT
	// notifyResend is FUSE_NOTIFY_RESEND: a bare out header, unique 0.
	notifyResend = 7
	initFile     = "init"
	journalFile  = "nodes"
)

// Session is what a supervised worker inherits.
type Session struct {
	// FD is the supervisor's /dev/fuse descriptor, mounted and past INIT.
	FD int
	// Dir is the supervisor's state directory for the mount: the saved
	// INIT and the node journal.
	Dir string
	// Gen numbers the worker, from 1: handles carry it.
	Gen uint32
}

// Conn is the supervisor's side of a session.
type Conn struct {
	file   *os.File
	dir    string // the mount point
	state  string
	resend bool // the kernel supports FUSE_NOTIFY_RESEND
}

// ErrNoResend means the kernel cannot resend the requests a dead worker
// had read: Interrupt must answer them, or they wait for ever.
var ErrNoResend = errors.New("fuse: the kernel has no FUSE_NOTIFY_RESEND (Linux 6.9 or later)")

// Connect mounts opts' bucket at dir on a connection the caller keeps,
// and answers the kernel's INIT with what a worker would (the settings
// of mountOptions), saving it under state for the workers. Root mounts
// directly; anyone else through fusermount3. Nothing is served until a
// worker starts.
func Connect(dir, state string, opts Options) (*Conn, error) {
	o, err := opts.normalize()
	if err != nil {
		return nil, err
	}
	mo := mountOptions(o).MountOptions
	c := &Conn{dir: dir, state: state}
	if os.Geteuid() == 0 && !viaFusermount {
		err = c.mount(&mo)
	} else {
		c.file, err = fusermount(dir, &mo)
	}
	if err != nil {
		return nil, err
	}
	if err := c.init(&mo); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// mount opens /dev/fuse and calls mount(2) with it, as go-fuse's direct
// mount does.
func (c *Conn) mount(mo *fuse.MountOptions) error {
	var st syscall.Stat_t
	if err := syscall.Stat(c.dir, &st); err != nil {
		return fmt.Errorf("fuse: mount point: %w", err)
	}
	fd, err := unix.Open("/dev/fuse", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("fuse: open /dev/fuse: %w", err)
	}
	c.file = os.NewFile(uintptr(fd), "/dev/fuse")
	data := fmt.Sprintf("fd=%d,rootmode=%o,user_id=%d,group_id=%d,max_read=%d",
		c.file.Fd(), st.Mode&syscall.S_IFMT, os.Geteuid(), os.Getegid(), mo.MaxWrite)
	for _, opt := range mo.Options {
		data += "," + opt
	}
	if mo.AllowOther {
		data += ",allow_other"
	}
	if err := unix.Mount(mo.FsName, c.dir, "fuse."+mo.Name, unix.MS_NOSUID|unix.MS_NODEV, data); err != nil {
		c.file.Close()
		return fmt.Errorf("fuse: mount %s: %w", c.dir, err)
	}
	return nil
}

// init reads the kernel's INIT, answers it and saves it.
func (c *Conn) init(mo *fuse.MountOptions) error {
	buf := make([]byte, 1<<20+64<<10)
	n, err := unix.Read(int(c.file.Fd()), buf)
	if err != nil {
		return fmt.Errorf("fuse: read INIT: %w", err)
	}
	in := buf[:n]
	if n < int(unsafe.Sizeof(fuse.InitIn{})) || binary.LittleEndian.Uint32(in[4:]) != opInit {
		return fmt.Errorf("fuse: the kernel's first request is not INIT (%d bytes)", n)
	}
	out := make([]byte, 4096)
	m, st := fuse.NewProtocolServer(fuse.NewDefaultRawFileSystem(), mo).HandleRequest([][]byte{in}, [][]byte{out})
	if !st.Ok() {
		return fmt.Errorf("fuse: INIT: %v", st)
	}
	if _, err := unix.Write(int(c.file.Fd()), out[:m]); err != nil {
		return fmt.Errorf("fuse: answer INIT: %w", err)
	}
	initIn := (*fuse.InitIn)(unsafe.Pointer(&in[0]))
	c.resend = initIn.Flags64()&fuse.CAP_HAS_RESEND != 0
	if err := writeFileAtomic(filepath.Join(c.state, initFile), in); err != nil {
		return fmt.Errorf("fuse: save INIT: %w", err)
	}
	return nil
}

// File is the descriptor to hand each worker.
func (c *Conn) File() *os.File { return c.file }

// NoResend makes the connection act as on a kernel without
// FUSE_NOTIFY_RESEND (tests of Interrupt).
func (c *Conn) NoResend() { c.resend = false }

// Resend asks the kernel to hand the next worker every request a dead
// one had read but not answered. Call it while no worker runs: a live
// worker's requests would be answered twice.
func (c *Conn) Resend() error {
	if !c.resend {
		return ErrNoResend
	}
	if err := c.clearInflight(); err != nil {
		return err
	}
	var h [16]byte
	binary.LittleEndian.PutUint32(h[0:], 16)
	binary.LittleEndian.PutUint32(h[4:], notifyResend)
	if _, err := unix.Write(int(c.file.Fd()), h[:]); err != nil {
		return fmt.Errorf("fuse: resend: %w", err)
	}
	return nil
}

// Close detaches the mount if it is still there and closes the
// connection: requests still waiting fail (ENOTCONN).
func (c *Conn) Close() error {
	var err error
	if mounted, _ := IsMounted(c.dir); mounted {
		err = lazyUnmount(c.dir)
	}
	if cerr := c.file.Close(); err == nil {
		err = cerr
	}
	return err
}

// serveSession starts go-fuse on the inherited connection: the saved
// INIT goes through a socket pair, so that go-fuse negotiates exactly as
// the supervisor's answer did, and the connection then takes the
// socket's descriptor number.
func serveSession(raw fuse.RawFileSystem, s *Session, mo *fuse.MountOptions) (*fuse.Server, error) {
	init, err := os.ReadFile(filepath.Join(s.Dir, initFile))
	if err != nil {
		return nil, fmt.Errorf("fuse: session: %w", err)
	}
	if len(init) < int(unsafe.Sizeof(fuse.InitIn{})) {
		return nil, fmt.Errorf("fuse: session: a saved INIT of %d bytes", len(init))
	}
	binary.LittleEndian.PutUint64(init[8:], 2) // unique
	sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("fuse: session: %w", err)
	}
	defer unix.Close(sp[1])
	if _, err := unix.Write(sp[1], init); err != nil {
		unix.Close(sp[0])
		return nil, fmt.Errorf("fuse: session: %w", err)
	}
	srv, err := fuse.NewServer(raw, fmt.Sprintf("/dev/fd/%d", sp[0]), mo)
	if err != nil {
		unix.Close(sp[0])
		return nil, fmt.Errorf("fuse: session: %w", err)
	}
	// go-fuse answered the replayed INIT into the socket; drop it.
	_, _ = unix.Read(sp[1], make([]byte, 4096))
	if !residentReads(srv) && mo.Logger != nil {
		mo.Logger.Printf("fuse: session: go-fuse's request buffers not found: a request taken as this worker dies may fail (EIO)")
	}
	if err := unix.Dup3(s.FD, sp[0], unix.O_CLOEXEC); err != nil {
		return nil, fmt.Errorf("fuse: session: take over the connection: %w", err)
	}
	unix.Close(s.FD)
	go srv.Serve()
	return srv, nil
}

// residentReads makes every buffer go-fuse reads requests into resident
// (each page written) when go-fuse makes it; false if go-fuse has no
// such pool any more. The kernel copies a request into the buffer after
// taking it off its queue. A fresh buffer's pages are not mapped yet, so
// that copy faults them in, which the kernel gives up once the worker
// is being killed: it then ends the request with EIO (the caller's open
// or read fails) where it would otherwise keep it for the next worker
// (Resend). A copy into mapped pages cannot fail that way. (The buffer
// that took the replayed INIT was made before this; the INIT mapped
// the pages that requests of up to 4 KiB land in.)
func residentReads(srv *fuse.Server) bool {
	pool := requestBuffers(srv)
	if pool == nil || pool.New == nil {
		return false
	}
	alloc := pool.New
	pool.New = func() any {
		b := alloc()
		if buf, ok := b.([]byte); ok {
			touchPages(buf)
		}
		return b
	}
	return true
}

// requestBuffers returns go-fuse's pool of request buffers in srv (a
// private field: go-fuse offers no option for its buffers), nil if its
// Server has no such field any more.
func requestBuffers(srv *fuse.Server) *sync.Pool {
	f := reflect.ValueOf(srv).Elem().FieldByName("readPool")
	if !f.IsValid() || f.Type() != reflect.TypeFor[sync.Pool]() {
		return nil
	}
	return (*sync.Pool)(unsafe.Pointer(f.UnsafeAddr()))
}

// touchPages writes a byte in each page of b, mapping every one.
func touchPages(b []byte) {
	step := os.Getpagesize()
	for i := 0; i < len(b); i += step {
		b[i] = 0
	}
	if len(b) > 0 {
		b[len(b)-1] = 0
	}
}

// writeFileAtomic writes b to path through a temporary file.
func writeFileAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
