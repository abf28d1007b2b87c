// Package fs is the local-directory origin: each sub-directory of Root is a
// bucket and each file under it an object, so users can drop files in and
// serve them. Metadata and ETags of objects written through the origin live
// in a hidden sidecar store under Root/.granary, which is never a valid
// bucket name and never appears in a listing.
//
// Limits of a filesystem, documented rather than hidden:
//   - A key cannot be both an object and a prefix of another ("a" and
//     "a/b"): the second Put fails with store.ErrInvalidKey.
//   - Keys ending in "/" (folder objects) must be zero bytes long.
//   - A file changed outside Granary is detected by its size and mtime; a
//     rewrite that keeps both (same size within one mtime tick) is not.
//   - Per-key locks are in-process: run one Granary process per Root.
//   - Every path is resolved through os.Root, so neither ".." nor a symlink
//     can reach outside the bucket (reads) or Root (writes).
//
// Multipart uploads (multipart.go) keep their parts under
// Root/.granary/uploads, so they survive a restart; a completion writes the
// object through the same staged, atomic path as Put.
package fs

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/parts"
)

// Options configure a directory origin.
type Options struct {
	// Root is the directory whose sub-directories are the buckets. It is
	// created if missing. Required.
	Root string
	// NoSync skips fsync of data, sidecars and directories. Zero value:
	// every Put is durable when it returns. Only tests should set it.
	NoSync bool
	// Private creates every file 0600 and every directory 0700
	// (store.PrivateFileMode, store.PrivateDirMode): for a Root inside a
	// node's data directory. Zero value: 0644 and 0755 (less the umask),
	// for a directory other programs read too.
	Private bool
}

// Layout of the hidden area under Root. ".granary" is not a valid bucket
// name (it starts with '.'), so it can never collide with a bucket.
const (
	hiddenDir      = ".granary"
	stagingDir     = hiddenDir + "/tmp"     // temp files, renamed into place
	metaDir        = hiddenDir + "/meta"    // sidecars: meta/<bucket>/<hh>/<sha256(key)>
	uploadsDir     = hiddenDir + "/uploads" // multipart uploads, a parts.Store
	sharedDirPerm  = 0o755
	sharedFilePerm = 0o644
	staleTmpAge    = time.Hour // leftover temp files older than this are removed at start
)

// Origin serves the sub-directories of a local directory as buckets.
// It is safe for concurrent use.
type Origin struct {
	dir    string
	root   *os.Root // Root; every path below is resolved through it
	noSync bool
	// dirPerm and filePerm are the modes of what it creates (see
	// Options.Private).
	dirPerm, filePerm os.FileMode
	// uploads holds multipart uploads in progress. It works on plain paths
	// under Root/.granary/uploads, which only upload IDs it made itself
	// name: no client string becomes a path there.
	uploads *parts.Store

	// bucketMu: RemoveBucket holds it exclusively; commits (the rename step
	// of Put, Copy, Delete) hold it shared. So a bucket is never removed
	// between a commit's existence check and its rename.
	bucketMu sync.RWMutex
	// keyMu stripes per (bucket, key): commits hold the stripe exclusively
	// while they swap data file and sidecar; readers hold it shared while
	// they open the file and read its sidecar, so a reader never pairs new
	// data with an old sidecar. Lock order: bucketMu, then stripes in index
	// order (see lockCommit; everything else holds one stripe at a time).
	keyMu [64]sync.RWMutex
}

var (
	_ store.Origin = (*Origin)(nil)
	_ store.Copier = (*Origin)(nil)
)

// New opens (creating if needed) the directory opts.Root as an origin.
func New(opts Options) (*Origin, error) {
	if opts.Root == "" {
		return nil, errors.New("fs: Options.Root is required")
	}
	o := &Origin{dir: opts.Root, noSync: opts.NoSync, dirPerm: sharedDirPerm, filePerm: sharedFilePerm}
	if opts.Private {
		o.dirPerm, o.filePerm = store.PrivateDirMode, store.PrivateFileMode
	}
	if err := os.MkdirAll(opts.Root, o.dirPerm); err != nil {
		return nil, fmt.Errorf("fs: create root: %w", err)
	}
	root, err := os.OpenRoot(opts.Root)
	if err != nil {
		return nil, fmt.Errorf("fs: open root: %w", err)
	}
	o.root = root
	for _, d := range []string{stagingDir, metaDir} {
		if err := root.MkdirAll(d, o.dirPerm); err != nil {
			root.Close()
			return nil, fmt.Errorf("fs: create %s: %w", d, err)
		}
	}
	o.removeStaleTemps()
	o.uploads, err = parts.Open(parts.Options{Dir: filepath.Join(opts.Root, uploadsDir), NoSync: opts.NoSync})
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("fs: open uploads: %w", err)
	}
	return o, nil
}

// Close releases the root directory handle and the upload store.
func (o *Origin) Close() error {
	o.uploads.Close()
	return o.root.Close()
}

// removeStaleTemps deletes temp files left by a crash. Only old ones: a
// second process sharing Root may be writing young ones right now.
func (o *Origin) removeStaleTemps() {
	entries, err := readDirNames(o.root, stagingDir)
	if err != nil {
		return
	}
	for _, name := range entries {
		p := stagingDir + "/" + name
		if fi, err := o.root.Lstat(p); err == nil && time.Since(fi.ModTime()) > staleTmpAge {
			o.root.Remove(p)
		}
	}
}

// stripe returns the index in keyMu of the lock of bucket/key.
func (o *Origin) stripe(bucket, key string) int {
	h := fnv.New32a()
	h.Write([]byte(bucket))
	h.Write([]byte{0})
	h.Write([]byte(key))
	return int(h.Sum32() % uint32(len(o.keyMu)))
}

func (o *Origin) keyLock(bucket, key string) *sync.RWMutex { return &o.keyMu[o.stripe(bucket, key)] }

// openBucket opens the bucket directory as a root of its own, so reads
// below it cannot follow a symlink out of the bucket.
func (o *Origin) openBucket(bucket string) (*os.Root, error) {
	if err := store.CheckBucketName(bucket); err != nil {
		return nil, err
	}
	br, err := o.root.OpenRoot(bucket)
	if err != nil {
		if isNotFound(err) || isEscape(err) {
			return nil, fmt.Errorf("%w: %s", store.ErrNoSuchBucket, bucket)
		}
		return nil, fmt.Errorf("fs: open bucket %s: %w", bucket, err)
	}
	return br, nil
}

// ListBuckets lists the valid-named directories of Root, by name.
func (o *Origin) ListBuckets(ctx context.Context) ([]store.BucketInfo, error) {
	names, err := readDirNames(o.root, ".")
	if err != nil {
		return nil, fmt.Errorf("fs: list buckets: %w", err)
	}
	var out []store.BucketInfo
	for _, name := range names {
		if store.CheckBucketName(name) != nil {
			continue
		}
		fi, err := o.root.Stat(name) // follows symlinks that stay in Root
		if err != nil || !fi.IsDir() {
			continue
		}
		out = append(out, store.BucketInfo{Name: name, Created: fi.ModTime().UTC()})
	}
	slices.SortFunc(out, func(a, b store.BucketInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// MakeBucket creates the bucket directory.
func (o *Origin) MakeBucket(ctx context.Context, bucket string) error {
	if err := store.CheckBucketName(bucket); err != nil {
		return err
	}
	if err := o.root.Mkdir(bucket, o.dirPerm); err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("%w: %s", store.ErrBucketExists, bucket)
		}
		return fmt.Errorf("fs: make bucket %s: %w", bucket, err)
	}
	return o.syncDir(".")
}

// StatBucket returns nil if the bucket directory exists.
func (o *Origin) StatBucket(ctx context.Context, bucket string) error {
	br, err := o.openBucket(bucket)
	if err != nil {
		return err
	}
	return br.Close()
}

// RemoveBucket removes a bucket that holds no object (empty directories
// left behind do not count) together with its sidecars, then aborts its
// multipart uploads.
func (o *Origin) RemoveBucket(ctx context.Context, bucket string) error {
	if err := o.removeBucketDir(ctx, bucket); err != nil {
		return err
	}
	return o.uploads.AbortBucket(bucket)
}

// removeBucketDir removes the bucket's directory and sidecars, holding
// bucketMu so no commit can land in it meanwhile.
func (o *Origin) removeBucketDir(ctx context.Context, bucket string) error {
	o.bucketMu.Lock()
	defer o.bucketMu.Unlock()
	br, err := o.openBucket(bucket)
	if err != nil {
		return err
	}
	has, err := o.hasObject(ctx, br, bucket)
	br.Close()
	if err != nil {
		return fmt.Errorf("fs: remove bucket %s: %w", bucket, err)
	}
	if has {
		return fmt.Errorf("%w: %s", store.ErrBucketNotEmpty, bucket)
	}
	if err := o.root.RemoveAll(bucket); err != nil {
		return fmt.Errorf("fs: remove bucket %s: %w", bucket, err)
	}
	if err := o.root.RemoveAll(metaDir + "/" + bucket); err != nil {
		return fmt.Errorf("fs: remove sidecars of %s: %w", bucket, err)
	}
	return nil
}

// readDirNames returns the names in directory name under r, unsorted.
func readDirNames(r *os.Root, name string) ([]string, error) {
	f, err := r.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// syncDir fsyncs a directory under Root so a rename or create in it is
// durable.
func (o *Origin) syncDir(name string) error {
	if o.noSync {
		return nil
	}
	f, err := o.root.Open(name)
	if err != nil {
		return fmt.Errorf("fs: sync dir: %w", err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fs: sync dir %s: %w", name, err)
	}
	return nil
}

func isNotFound(err error) bool {
	return errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// isEscape reports whether err is os.Root refusing a path that leaves it
// (a ".." or a symlink pointing outside). os.Root reports that with an
// unexported error, not an errno; every errno-free PathError from it is
// treated as an escape, which only ever makes a path unreachable.
func isEscape(err error) bool {
	var pe *os.PathError
	var errno syscall.Errno
	return errors.As(err, &pe) && !errors.As(pe.Err, &errno)
}
