// Atomic writes of the directory origin: the body goes to a temp file in
// the staging area (same filesystem as the buckets), is fsynced, and is
// renamed into place with its sidecar, so a failed or short body leaves
// nothing and a reader sees either the old object or the new one.
package fs

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
	"time"

	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/internal/xfer"
)

// commitAttempts bounds how often a commit retries when a concurrent
// Delete pruned the directory it had just created.
const commitAttempts = 5

// Put stores body as bucket/key, all or nothing.
func (o *Origin) Put(ctx context.Context, bucket, key string, body io.Reader, size int64, meta store.ObjectMeta) (store.ObjectInfo, error) {
	if err := o.checkTarget(bucket, key); err != nil {
		return store.ObjectInfo{}, err
	}
	if isFolderKey(key) {
		return o.putFolder(bucket, key, body, size, meta)
	}
	tmp, fi, etag, err := o.stage(ctx, body, size)
	if err != nil {
		return store.ObjectInfo{}, fmt.Errorf("fs: put %s/%s: %w", bucket, key, err)
	}
	defer o.root.Remove(tmp) // no-op once renamed
	sc := newSidecar(key, fi.Size(), fi.ModTime(), etag, meta)
	scTmp, err := o.stageSidecar(sc)
	if err != nil {
		return store.ObjectInfo{}, err
	}
	defer o.root.Remove(scTmp)
	if err := o.commit(bucket, key, tmp, scTmp); err != nil {
		return store.ObjectInfo{}, err
	}
	return store.ObjectInfo{
		Bucket: bucket, Key: key, Size: fi.Size(), ETag: etag,
		LastModified: fi.ModTime().UTC(), ObjectMeta: sc.meta(),
	}, nil
}

// checkTarget validates a Put target before any body byte is read: the
// names, the bucket's existence, and that key is not already a directory.
func (o *Origin) checkTarget(bucket, key string) error {
	br, err := o.openKey(bucket, key)
	if err != nil {
		return err
	}
	defer br.Close()
	if isFolderKey(key) {
		return nil
	}
	if fi, err := br.Stat(key); err == nil && fi.IsDir() {
		return conflict(bucket, key)
	}
	return nil
}

// stage copies body into a new temp file, fsyncs it and returns its name,
// its info and the MD5 of its content. Exactly size bytes are taken when
// size >= 0; fewer is ErrIncompleteBody. On error no temp file remains.
func (o *Origin) stage(ctx context.Context, body io.Reader, size int64) (string, fs.FileInfo, string, error) {
	f, name, err := o.createTemp("put")
	if err != nil {
		return "", nil, "", err
	}
	h := md5.New()
	_, err = xfer.Copy(ctx, io.MultiWriter(f, h), body, size, 0)
	if err == nil && !o.noSync {
		err = f.Sync()
	}
	var fi fs.FileInfo
	if err == nil {
		fi, err = f.Stat()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		o.root.Remove(name)
		return "", nil, "", err
	}
	return name, fi, hex.EncodeToString(h.Sum(nil)), nil
}

// commit renames the staged data file and sidecar into place for
// bucket/key, creating parent directories.
func (o *Origin) commit(bucket, key, tmp, scTmp string) error {
	defer o.lockCommit(bucket, key)()
	err := o.place(bucket, key, func() error { return o.root.Rename(tmp, bucket+"/"+key) })
	if err != nil {
		return renameError(err, bucket, key)
	}
	if err := o.syncDir(path.Dir(bucket + "/" + key)); err != nil {
		return err
	}
	return o.publishSidecar(scTmp, bucket, key)
}

// lockCommit takes what a commit of bucket/key holds: bucketMu shared,
// the key's stripe and the stripe of the folder key of its parent
// directory, which is the lock prune holds to remove that directory. So
// the parent cannot be pruned between its creation and the rename into
// it. Two stripes are taken in index order (once if they are the same),
// and prune holds one stripe at a time, so no lock cycle can form.
func (o *Origin) lockCommit(bucket, key string) (unlock func()) {
	o.bucketMu.RLock()
	a, b := o.stripe(bucket, key), -1
	if dir := path.Dir(strings.TrimSuffix(key, "/")); dir != "." {
		b = o.stripe(bucket, dir+"/")
	}
	if b == a {
		b = -1
	}
	if b >= 0 && b < a {
		a, b = b, a
	}
	o.keyMu[a].Lock()
	if b >= 0 {
		o.keyMu[b].Lock()
	}
	return func() {
		if b >= 0 {
			o.keyMu[b].Unlock()
		}
		o.keyMu[a].Unlock()
		o.bucketMu.RUnlock()
	}
}

// place creates the parents of key and runs publish. A Delete pruning an
// ancestor directory (only the parent is locked) may remove a directory
// MkdirAll has just made; that surfaces as ENOENT, and place tries again.
func (o *Origin) place(bucket, key string, publish func() error) error {
	var err error
	for range commitAttempts {
		if err = o.makeParents(bucket, key); err == nil {
			err = publish()
		}
		if err == nil || errors.Is(err, store.ErrNoSuchBucket) || !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return err
}

// makeParents creates the directories above key inside the bucket (for a
// folder key, its own directory too). It goes through the bucket's own
// root, so a symlink in the way that leads out of the bucket is refused.
func (o *Origin) makeParents(bucket, key string) error {
	br, err := o.openBucket(bucket)
	if err != nil {
		return err
	}
	defer br.Close()
	dir := path.Dir(key)
	if isFolderKey(key) {
		dir = strings.TrimSuffix(key, "/")
	}
	if dir == "." {
		return nil
	}
	return br.MkdirAll(dir, o.dirPerm)
}

// putFolder stores a folder object "dir/": its directory plus a sidecar
// marking it. Folder objects hold no bytes.
func (o *Origin) putFolder(bucket, key string, body io.Reader, size int64, meta store.ObjectMeta) (store.ObjectInfo, error) {
	if size > 0 {
		return store.ObjectInfo{}, fmt.Errorf("%w: %s/%s: a key ending in '/' must be empty", store.ErrInvalidKey, bucket, key)
	}
	if size < 0 {
		var one [1]byte
		n, err := io.ReadFull(body, one[:])
		if n > 0 {
			return store.ObjectInfo{}, fmt.Errorf("%w: %s/%s: a key ending in '/' must be empty", store.ErrInvalidKey, bucket, key)
		}
		if err != nil && err != io.EOF {
			return store.ObjectInfo{}, fmt.Errorf("fs: put %s/%s: read body: %w", bucket, key, err)
		}
	}
	now := time.Now()
	sc := newSidecar(key, 0, now, emptyMD5, meta)
	scTmp, err := o.stageSidecar(sc)
	if err != nil {
		return store.ObjectInfo{}, err
	}
	defer o.root.Remove(scTmp)
	defer o.lockCommit(bucket, key)()
	if err := o.place(bucket, key, func() error { return o.publishSidecar(scTmp, bucket, key) }); err != nil {
		return store.ObjectInfo{}, renameError(err, bucket, key)
	}
	return store.ObjectInfo{Bucket: bucket, Key: key, ETag: emptyMD5,
		LastModified: now.UTC(), ObjectMeta: sc.meta()}, nil
}

// renameError translates an error of creating the path of bucket/key.
func renameError(err error, bucket, key string) error {
	switch {
	case errors.Is(err, store.ErrNoSuchBucket):
		return err
	case errors.Is(err, syscall.ENOTDIR), errors.Is(err, syscall.EEXIST),
		errors.Is(err, syscall.EISDIR), errors.Is(err, syscall.ENOTEMPTY):
		return conflict(bucket, key)
	case errors.Is(err, syscall.ENAMETOOLONG):
		return fmt.Errorf("%w: %s/%s: name too long for the filesystem", store.ErrInvalidKey, bucket, key)
	case isEscape(err):
		return fmt.Errorf("%w: %s/%s: path leads out of the bucket", store.ErrInvalidKey, bucket, key)
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%w: %s", store.ErrNoSuchBucket, bucket)
	}
	return fmt.Errorf("fs: put %s/%s: %w", bucket, key, err)
}

func conflict(bucket, key string) error {
	return fmt.Errorf("%w: %s/%s: a filesystem cannot hold a key that is both an object and a prefix of another key",
		store.ErrInvalidKey, bucket, key)
}
