// `granary mount`: a bucket (or a prefix of it) of a Granary node as a
// directory, through the kernel's FUSE, in the foreground until SIGINT,
// SIGTERM or an unmount by hand; with --supervise, a parent process keeps
// a worker running it (supervise.go).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/granary-dev/granary/fuse"
)

// mountFlags are the flags of `granary mount`.
type mountFlags struct {
	client      clientFlags
	prefix      string
	readOnly    bool
	allowOther  bool
	viaEndpoint bool
	stageDir    string
	uid, gid    ownerID
	fileMode    octalMode
	dirMode     octalMode
	metadataTTL time.Duration
	maxMemory   Size
	debug       bool
	supervise   bool
	// readyFD, set by a supervisor for its worker, is a pipe to which the
	// worker writes one byte once it has mounted (0: none).
	readyFD int
	// session is the supervisor's FUSE connection a worker serves
	// (fd 0: none; the worker mounts itself).
	session fuse.Session
	// resend false makes a supervisor act as on a kernel without
	// FUSE_NOTIFY_RESEND (tests).
	resend bool
}

const mountLong = `Mount BUCKET (or the part of it under --prefix) of a Granary node, or of
any S3 endpoint, at MOUNTPOINT, an existing directory, so that training
code can read objects as files. Directories come from listings, file
contents from ranged GETs with read-ahead for sequential readers.

The command runs in the foreground: it prints one line once mounted, and
unmounts cleanly on SIGINT or SIGTERM; it also exits (0) when the mount is
removed by hand (fusermount3 -u MOUNTPOINT).

Writes: a file opened for writing is staged in a temp file under
--stage-dir (any write pattern works: seeks, rewrites, torch.save) and
uploaded when it is closed or fsynced; close and fsync report a failed
upload. Rename of a file (write to a temp name, then rename) is a copy and
a delete at the endpoint; mkdir makes a folder marker, rmdir removes an
empty one. What S3 cannot hold fails with a clear errno: chmod/chown
(ENOTSUP), directory rename (EXDEV), links (EPERM), xattrs (ENOTSUP).
--read-only refuses every change with EROFS.

Credentials come from GRANARY_ACCESS_KEY and GRANARY_SECRET_KEY (or
GRANARY_ACCESS_KEY_FILE / GRANARY_SECRET_KEY_FILE), the region from
GRANARY_REGION (default us-east-1). A missing bucket or bad credentials
fail at once, before anything is mounted (exit 1).

With --supervise the command becomes a supervisor: it runs the mount in a
worker process and, if the worker dies (killed, out of memory, a crash),
starts a new one at once. The supervisor holds the FUSE connection
itself (mounting directly as root, else through fusermount3), so the
kernel waits for the new worker instead of failing: open files,
directory listings and working directories inside the mount carry on,
and only a file open for writing fails, with EIO at its next write or
close (the object keeps its previous version). Requests the dead worker
had taken are resent to the new one (Linux 6.9 or later) or, on older
kernels, answered EINTR, which callers retry (Go, Python and coreutils
do). Where the supervisor cannot hold the connection, the dead mount is
removed and mounted again: files open at the time must be reopened.
More than 8 quick deaths in a row back off up to 5s. If the very first worker fails before it mounts, the
supervisor exits with its error.

Exit codes: 0 after a clean unmount, 1 if mounting fails, 2 for a usage
error.`

func newMountCmd(getenv Getenv) *cobra.Command {
	f := defaultMountFlags()
	cmd := &cobra.Command{
		Use:   "mount [flags] BUCKET MOUNTPOINT",
		Short: "Mount a bucket as a directory (FUSE)",
		Long:  mountLong,
		Example: `  GRANARY_ACCESS_KEY=... GRANARY_SECRET_KEY=... \
    granary mount --endpoint http://10.0.0.5:9000 --prefix imagenet/train \
    --uid 1000 --gid 1000 --supervise datasets /mnt/imagenet`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usageError{fmt.Errorf("mount: want BUCKET MOUNTPOINT, got %d argument(s)", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts, dir, err := f.options(getenv, args[0], args[1])
			if err != nil {
				return err
			}
			if f.supervise {
				return supervise(cmd.Context(), &opts, f.resend, workerArgs(cmd.Flags(), opts.Bucket, dir), dir, cmd.ErrOrStderr())
			}
			return mountForeground(cmd.Context(), dir, opts, f.readyFD, cmd.ErrOrStderr())
		},
	}
	f.register(cmd.Flags())
	return cmd
}

// defaultMountFlags are the flags' defaults.
func defaultMountFlags() mountFlags {
	return mountFlags{uid: -1, gid: -1, fileMode: 0o644, dirMode: 0o755,
		metadataTTL: time.Minute, maxMemory: 256 << 20}
}

// register adds the flags to fs.
func (f *mountFlags) register(fs *pflag.FlagSet) {
	f.client.register(fs)
	fs.StringVar(&f.prefix, "prefix", "", "show only the keys under this `prefix` (a trailing / is implied) as the mount's root")
	fs.BoolVar(&f.readOnly, "read-only", false, "refuse every change (EROFS)")
	fs.BoolVar(&f.viaEndpoint, "via-endpoint-only", false, "read every chunk through --endpoint (by default, when the endpoint is a member of "+
		"a Granary cluster, each chunk is read from the member that owns it: one hop per read)")
	fs.BoolVar(&f.allowOther, "allow-other", false, "let other users than the one mounting read the mount (FUSE allow_other: "+
		"a sidecar mounting as root for a trainer running as another user; others need user_allow_other in /etc/fuse.conf)")
	fs.StringVar(&f.stageDir, "stage-dir", "", "`directory` where files open for writing are staged until uploaded (default: the system's temp directory)")
	fs.Var(&f.uid, "uid", "user `ID` that owns every file and directory (default: the user running the command)")
	fs.Var(&f.gid, "gid", "group `ID` that owns every file and directory (default: the group running the command)")
	fs.Var(&f.fileMode, "file-mode", "permission bits of files, in `octal`")
	fs.Var(&f.dirMode, "dir-mode", "permission bits of directories, in `octal`")
	fs.DurationVar(&f.metadataTTL, "metadata-ttl", f.metadataTTL,
		"how long listings and file attributes are cached, here and in the kernel (a `duration`); "+
			"changes in the bucket show after at most this long")
	fs.Var(sizeFlag{&f.maxMemory}, "max-memory", "memory `size` for all read-ahead and buffers together; past it, readers wait")
	fs.BoolVar(&f.debug, "debug", false, "log every FUSE operation to stderr")
	fs.BoolVar(&f.supervise, "supervise", false, "run the mount in a worker process and restart it if it dies (see above)")
	fs.IntVar(&f.readyFD, "ready-fd", 0, "file descriptor a supervised worker reports its mount on (internal)")
	_ = fs.MarkHidden("ready-fd") // the flag exists: MarkHidden cannot fail
	fs.IntVar(&f.session.FD, "session-fd", 0, "the supervisor's FUSE connection a worker serves (internal)")
	fs.StringVar(&f.session.Dir, "session-dir", "", "the supervisor's state directory for the connection (internal)")
	fs.Uint32Var(&f.session.Gen, "session-gen", 0, "the worker's number on the connection (internal)")
	fs.BoolVar(&f.resend, "fuse-resend", true, "a supervisor asks the kernel to resend a dead worker's requests where it can (internal: false tests the EINTR answers of older kernels)")
	for _, name := range []string{"session-fd", "session-dir", "session-gen", "fuse-resend"} {
		_ = fs.MarkHidden(name)
	}
}

// options checks the flags and arguments and turns them into fuse.Options
// and the absolute mountpoint. Every error is a usageError: nothing has
// been started yet.
func (f *mountFlags) options(getenv Getenv, bucket, mountpoint string) (fuse.Options, string, error) {
	var o fuse.Options
	if bucket == "" {
		return o, "", usageError{errors.New("mount: empty BUCKET")}
	}
	node, err := f.client.Remote(getenv)
	if err != nil {
		return o, "", usageError{err}
	}
	creds, err := clientCredentials(getenv)
	if err != nil {
		return o, "", usageError{err}
	}
	if err := f.checkNumbers(); err != nil {
		return o, "", usageError{err}
	}
	dir, err := f.mountpoint(mountpoint)
	if err != nil {
		return o, "", usageError{err}
	}
	o = fuse.Options{
		Endpoint: node.url, AccessKey: creds.access, SecretKey: creds.secret, Region: creds.region,
		RootCAs: node.cas, Bucket: bucket, Prefix: f.prefix, ReadOnly: f.readOnly, AllowOther: f.allowOther, ViaEndpointOnly: f.viaEndpoint, StageDir: f.stageDir,
		UID: uint32(os.Getuid()), GID: uint32(os.Getgid()),
		FileMode: os.FileMode(f.fileMode), DirMode: os.FileMode(f.dirMode),
		MetadataTTL: f.metadataTTL, MaxMemory: int64(f.maxMemory), Debug: f.debug,
	}
	if f.uid >= 0 {
		o.UID = uint32(f.uid)
	}
	if f.gid >= 0 {
		o.GID = uint32(f.gid)
	}
	if f.session.FD > 0 {
		session := f.session
		o.Session = &session
	}
	return o, dir, nil
}

// mountpoint checks the MOUNTPOINT argument. A session's worker does not
// look at it: it is the supervisor's mount, which only this worker will
// answer.
func (f *mountFlags) mountpoint(path string) (string, error) {
	if f.session.FD > 0 {
		if !filepath.IsAbs(path) || f.session.Dir == "" || f.session.Gen == 0 {
			return "", fmt.Errorf("--session-fd: want an absolute MOUNTPOINT, --session-dir and --session-gen")
		}
		return filepath.Clean(path), nil
	}
	return checkMountpoint(path, f.supervise)
}

// checkNumbers refuses IDs, durations and sizes out of range.
func (f *mountFlags) checkNumbers() error {
	if f.metadataTTL <= 0 {
		return fmt.Errorf("--metadata-ttl %s: want a positive duration, e.g. 5s", f.metadataTTL)
	}
	if f.maxMemory < minMountMemory {
		return fmt.Errorf("--max-memory %s: want at least %s", f.maxMemory, Size(minMountMemory))
	}
	if f.readyFD < 0 {
		return fmt.Errorf("--ready-fd %d: want a file descriptor", f.readyFD)
	}
	return nil
}

// minMountMemory is the smallest --max-memory accepted: room for a few
// read-ahead windows.
const minMountMemory = 4 << 20

// checkMountpoint returns the absolute path of an existing directory. A
// dead FUSE mount left by a killed process is named as such; a supervisor
// (clean set) removes it, as it would after a worker dies.
func checkMountpoint(path string, clean bool) (string, error) {
	if path == "" {
		return "", errors.New("mount: empty MOUNTPOINT")
	}
	dir, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("mountpoint %s: %w", path, err)
	}
	fi, err := os.Stat(dir)
	if errors.Is(err, syscall.ENOTCONN) && clean {
		if cerr := cleanDeadMount(dir); cerr != nil {
			return "", cerr
		}
		fi, err = os.Stat(dir)
	}
	switch {
	case errors.Is(err, syscall.ENOTCONN):
		return "", fmt.Errorf("mountpoint %s: a dead FUSE mount is left there (its process was killed); "+
			"remove it with 'fusermount3 -u %s' or mount with --supervise", dir, dir)
	case err != nil:
		return "", fmt.Errorf("mountpoint %s: want an existing directory: %w", dir, err)
	case !fi.IsDir():
		return "", fmt.Errorf("mountpoint %s: not a directory", dir)
	}
	return dir, nil
}

// mountForeground mounts, reports the mount (on w and, for a supervisor,
// on readyFD), and serves until ctx ends or the mount is removed by hand;
// then it unmounts.
func mountForeground(ctx context.Context, dir string, opts fuse.Options, readyFD int, w io.Writer) error {
	level := zerolog.InfoLevel
	if opts.Debug {
		level = zerolog.DebugLevel
	}
	if readyFD > 0 {
		// The descriptor came from the supervisor without close-on-exec;
		// a helper this process runs (fusermount3) must not hold it open.
		syscall.CloseOnExec(readyFD)
	}
	opts.Logger = zerolog.New(w).Level(level).With().Timestamp().Str("component", "fuse").Logger()
	srv, err := fuse.Mount(dir, opts)
	if err != nil {
		return fmt.Errorf("mount s3://%s/%s at %s: %w", opts.Bucket, opts.Prefix, dir, err)
	}
	fmt.Fprintf(w, "granary: mounted s3://%s/%s at %s (endpoint %s, pid %d)\n", opts.Bucket, opts.Prefix, dir, opts.Endpoint, os.Getpid())
	if readyFD > 0 {
		reportReady(readyFD)
	}
	gone := make(chan struct{})
	go func() { srv.Wait(); close(gone) }()
	select {
	case <-ctx.Done():
		if err := srv.Unmount(); err != nil {
			return fmt.Errorf("unmount %s: %w", dir, err)
		}
		select {
		case <-gone:
		case <-time.After(unmountWait):
			return fmt.Errorf("unmount %s: the file system still runs %s after the unmount", dir, unmountWait)
		}
		fmt.Fprintf(w, "granary: unmounted %s\n", dir)
	case <-gone:
		// Unmounted from outside: only the server's resources are left to
		// release, and an error saying it is no longer mounted is expected.
		_ = srv.Unmount()
		fmt.Fprintf(w, "granary: %s was unmounted; exiting\n", dir)
	}
	return nil
}

// unmountWait bounds how long the serve loop may run on after Unmount.
const unmountWait = 10 * time.Second

// reportReady writes one byte to the supervisor's pipe and closes it. A
// failure only means the supervisor is gone.
func reportReady(fd int) {
	f := os.NewFile(uintptr(fd), "ready")
	if f == nil {
		return
	}
	_, _ = f.Write([]byte{1})
	_ = f.Close()
}

// octalMode is a permission-bits flag written in octal ("0644").
type octalMode uint32

func (m *octalMode) Set(s string) error {
	v, err := strconv.ParseUint(s, 8, 32)
	if err != nil || v > 0o777 {
		return fmt.Errorf("invalid mode %q: want octal permission bits from 0 to 0777, e.g. 0644", s)
	}
	*m = octalMode(v)
	return nil
}

func (m *octalMode) String() string { return fmt.Sprintf("%#o", uint32(*m)) }
func (m *octalMode) Type() string   { return "octal" }

// ownerID is a --uid or --gid flag; -1 (the default) means the mounting
// process's own ID.
type ownerID int64

func (id *ownerID) Set(s string) error {
	v, err := strconv.ParseUint(s, 10, 32)
	// 2^32-1 is (uid_t)-1, "no ID", to the kernel.
	if err != nil || v == math.MaxUint32 {
		return fmt.Errorf("invalid ID %q: want a number from 0 to %d", s, uint32(math.MaxUint32-1))
	}
	*id = ownerID(v)
	return nil
}

func (id *ownerID) String() string {
	if *id < 0 {
		return "" // the default, which help does not print
	}
	return strconv.FormatInt(int64(*id), 10)
}

func (id *ownerID) Type() string { return "id" }

// sizeFlag is a Size as a flag value ("256MiB").
type sizeFlag struct{ p *Size }

func (s sizeFlag) Set(v string) error {
	n, err := ParseSize(v)
	if err != nil {
		return err
	}
	*s.p = n
	return nil
}

func (s sizeFlag) String() string {
	if s.p == nil { // pflag renders a zero value to find defaults
		return "0B"
	}
	return s.p.String()
}

func (s sizeFlag) Type() string { return "size" }
