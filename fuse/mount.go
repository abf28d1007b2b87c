// Mounting and unmounting: options normalised once, the bucket probed
// before the kernel sees anything, go-fuse set up, and an unmount that
// falls back to a lazy detach when files are still open.
package fuse

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/minio/minio-go/v7/pkg/s3utils"
)

const (
	defaultTTL       = time.Minute
	defaultMaxMemory = 256 << 20
	minMaxMemory     = 1 << 20
	// maxNegativeTTL bounds how long the kernel remembers that a name
	// does not exist.
	maxNegativeTTL = time.Second
	// unmountWait bounds how long Unmount waits, after a lazy detach,
	// for the kernel to end the session (it does not while files are
	// open).
	unmountWait = time.Second
	// serveWait bounds how long Unmount waits, once the mount is gone
	// from this namespace, for the session to end: its requests are
	// bounded by the S3 timeouts, so a session still served past it is
	// stuck or kept by a copy of the mount in another namespace, and
	// waiting on would hang the caller (a stopping worker, a test).
	serveWait = 45 * time.Second
)

// normalize checks opts and fills in the documented zero values.
func (o Options) normalize() (*Options, error) {
	if o.Endpoint == "" {
		return nil, errors.New("fuse: no endpoint")
	}
	if o.Bucket == "" {
		return nil, errors.New("fuse: no bucket")
	}
	if err := s3utils.CheckValidBucketName(o.Bucket); err != nil {
		return nil, fmt.Errorf("fuse: bucket name %q: %w", o.Bucket, err)
	}
	if o.MaxMemory < 0 || o.MetadataTTL < 0 {
		return nil, errors.New("fuse: negative MaxMemory or MetadataTTL")
	}
	if o.MaxMemory > 0 && o.MaxMemory < minMaxMemory {
		return nil, fmt.Errorf("fuse: MaxMemory %d is below the minimum of %d bytes", o.MaxMemory, minMaxMemory)
	}
	if o.Region == "" {
		o.Region = "us-east-1"
	}
	if o.Prefix = strings.Trim(o.Prefix, "/"); o.Prefix != "" {
		o.Prefix += "/"
	}
	if o.UID == 0 && o.GID == 0 {
		o.UID, o.GID = uint32(os.Getuid()), uint32(os.Getgid())
	}
	if o.FileMode == 0 {
		o.FileMode = 0o644
	}
	if o.DirMode == 0 {
		o.DirMode = 0o755
	}
	if o.MetadataTTL == 0 {
		o.MetadataTTL = defaultTTL
	}
	if o.MaxMemory == 0 {
		o.MaxMemory = defaultMaxMemory
	}
	if o.StageDir == "" {
		o.StageDir = os.TempDir()
	}
	return &o, nil
}

// Mount checks that the bucket is reachable with the credentials (a
// missing bucket or bad credentials fail here, with a clear error), then
// mounts it at dir and serves it until Unmount.
func Mount(dir string, opts Options) (*Server, error) {
	o, err := opts.normalize()
	if err != nil {
		return nil, err
	}
	if o.Session != nil {
		// The supervisor's mount: a stat would wait for this process.
	} else if st, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("fuse: mount point: %w", err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("fuse: mount point %s is not a directory", dir)
	}
	if !o.ReadOnly {
		if st, err := os.Stat(o.StageDir); err != nil {
			return nil, fmt.Errorf("fuse: staging directory: %w", err)
		} else if !st.IsDir() {
			return nil, fmt.Errorf("fuse: staging directory %s is not a directory", o.StageDir)
		}
	}
	cl, err := newClient(o)
	if err != nil {
		return nil, err
	}
	if err := cl.probe(context.Background(), o.Prefix); err != nil {
		cl.close()
		return nil, err
	}
	if !o.ViaEndpointOnly {
		cl.owners = newOwners(cl, o, schemeOf(o.Endpoint))
		cl.owners.learn(context.Background())
	}
	f := &filesys{opts: o, cl: cl, budget: newBudget(o.MaxMemory), dirs: newDirCache(o.MetadataTTL),
		log: o.Logger, mounted: time.Now()}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	srv, err := f.serve(dir)
	if err != nil {
		f.cancel()
		cl.close()
		f.ids.close()
		return nil, fmt.Errorf("fuse: mount %s at %s: %w", o.Bucket, dir, err)
	}
	s := &Server{srv: srv, dir: dir, fsys: f, served: make(chan struct{})}
	go func() {
		srv.Wait()
		close(s.served)
	}()
	o.Logger.Info().Str("bucket", o.Bucket).Str("prefix", o.Prefix).Str("dir", dir).
		Str("endpoint", o.Endpoint).Msg("fuse: mounted")
	return s, nil
}

// serve mounts f at dir, or takes over the session's connection: go-fuse's
// node tree behind the reviver, which keeps node ids and handles valid
// across workers.
func (f *filesys) serve(dir string) (*fuse.Server, error) {
	var j *journal
	var taken *inflight
	gen := uint32(1)
	if s := f.opts.Session; s != nil {
		var err error
		if j, err = openJournal(filepath.Join(s.Dir, journalFile), f.log); err != nil {
			return nil, err
		}
		if taken, err = openInflight(s.Dir); err != nil {
			j.close()
			return nil, err
		}
		gen = s.Gen
	}
	f.ids = newNodeTable(f.opts.ReadOnly, j)
	opts := mountOptions(f.opts)
	f.root = &dirNode{fsys: f, prefix: f.opts.Prefix}
	raw := newReviver(fs.NewNodeFS(f.root, opts), f.ids, gen)
	raw.taken = taken
	if s := f.opts.Session; s != nil {
		return serveSession(raw, s, &opts.MountOptions)
	}
	srv, err := fuse.NewServer(raw, dir, &opts.MountOptions)
	if err != nil {
		return nil, err
	}
	go srv.Serve()
	if err := srv.WaitMount(); err != nil {
		return nil, err
	}
	return srv, nil
}

// mountOptions are the go-fuse settings for o.
func mountOptions(o *Options) *fs.Options {
	ttl, neg := o.MetadataTTL, min(o.MetadataTTL, maxNegativeTTL)
	mo := fuse.MountOptions{
		FsName:     "granary:" + o.Bucket,
		Name:       "granary",
		AllowOther: o.AllowOther,
		// Many kernel read-aheads in flight keep sequential
		// readers streaming while our own read-ahead fills in.
		MaxBackground: 64,
		// Set, not defaulted: a supervisor answers INIT with these
		// options and its workers must agree with it.
		MaxWrite:    128 << 10,
		DirectMount: true,
		Debug:       o.Debug,
		Logger:      log.New(o.Logger, "", 0),
	}
	if o.ReadOnly {
		mo.Options = append(mo.Options, "ro")
	} else {
		// O_TRUNC comes with the open: a file opened to be
		// overwritten is not downloaded first.
		mo.ExtraCapabilities |= fuse.CAP_ATOMIC_O_TRUNC
	}
	return &fs.Options{
		MountOptions:    mo,
		EntryTimeout:    &ttl,
		AttrTimeout:     &ttl,
		NegativeTimeout: &neg,
		UID:             o.UID,
		GID:             o.GID,
		Logger:          log.New(o.Logger, "", 0),
		// Node ids are ours (nodeids.go): stable across workers.
		ExternalNodeID: true,
	}
}

// Wait blocks until the file system is unmounted.
func (s *Server) Wait() { <-s.served }

// Unmount unmounts the file system (lazily if it is busy) and releases
// the server's resources.
func (s *Server) Unmount() error {
	s.once.Do(func() { s.err = s.unmount() })
	return s.err
}

func (s *Server) unmount() error {
	defer s.fsys.ids.close()
	defer s.fsys.cl.close()
	defer s.fsys.cancel()
	if s.fsys.opts.Session != nil {
		// The supervisor's mount: go-fuse unmounts only mounts it made.
		if err := lazyUnmount(s.dir); err != nil && !s.ended() {
			return fmt.Errorf("fuse: unmount %s: %w", s.dir, err)
		}
	} else if err := s.goFuseUnmount(); err != nil {
		// Busy (open files, a process's working directory): detach
		// it from the namespace now; the kernel ends the session
		// when the last file is closed.
		s.fsys.log.Warn().Err(err).Str("dir", s.dir).Msg("fuse: unmount failed, detaching lazily")
		if lerr := lazyUnmount(s.dir); lerr != nil && !s.ended() {
			return fmt.Errorf("fuse: unmount %s: %w (lazy: %w)", s.dir, err, lerr)
		}
	}
	select {
	case <-s.served:
	case <-time.After(unmountWait):
		// Detached, but open files keep the session: it ends when
		// they are closed. Their reads fail from now on.
		s.fsys.log.Warn().Str("dir", s.dir).Msg("fuse: detached with files still open")
	}
	return nil
}

// errStuck is the error of an unmount whose session did not end: a
// request is stuck, or another mount namespace (one made while the
// mount existed, as `ip netns exec` or a container runtime makes them)
// holds a copy of the mount, which keeps the session.
var errStuck = errors.New("session still served")

// goFuseUnmount is go-fuse's Unmount (the unmount, then a wait for every
// request being served to end), with that wait bounded by serveWait.
func (s *Server) goFuseUnmount() error {
	done := make(chan error, 1)
	go func() { done <- s.srv.Unmount() }()
	select {
	case err := <-done:
		return err
	case <-time.After(serveWait):
		if mounted, _ := IsMounted(s.dir); mounted {
			return fmt.Errorf("fuse: unmount %s: no answer within %v", s.dir, serveWait)
		}
		s.fsys.log.Error().Str("dir", s.dir).Dur("after", serveWait).
			Msg("fuse: unmounted here, but the session goes on: a request is stuck, or another mount namespace holds a copy of the mount")
		return fmt.Errorf("fuse: unmount %s: %w after %v", s.dir, errStuck, serveWait)
	}
}

// ended reports whether the kernel has let go of the mount already.
func (s *Server) ended() bool {
	select {
	case <-s.served:
		return true
	default:
		return false
	}
}

// lazyUnmount detaches dir: by the syscall when we may, else through
// fusermount3 (or fusermount).
func lazyUnmount(dir string) error {
	err := syscall.Unmount(dir, syscall.MNT_DETACH)
	if err == nil {
		return nil
	}
	for _, bin := range []string{"fusermount3", "fusermount"} {
		if path, lerr := exec.LookPath(bin); lerr == nil {
			out, cerr := exec.Command(path, "-u", "-z", dir).CombinedOutput()
			if cerr == nil {
				return nil
			}
			return fmt.Errorf("%s -u -z: %w: %s", bin, cerr, strings.TrimSpace(string(out)))
		}
	}
	return err
}
