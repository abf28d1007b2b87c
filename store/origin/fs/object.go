// Reads, deletes and copies of objects in the directory origin.
package fs

import (
	"context"
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
)

// Stat returns the info of bucket/key.
func (o *Origin) Stat(ctx context.Context, bucket, key string) (store.ObjectInfo, error) {
	br, err := o.openKey(bucket, key)
	if err != nil {
		return store.ObjectInfo{}, err
	}
	defer br.Close()
	mu := o.keyLock(bucket, key)
	mu.RLock()
	defer mu.RUnlock()
	if isFolderKey(key) {
		return o.folderInfo(br, bucket, key)
	}
	fi, err := br.Stat(key)
	if err != nil {
		return store.ObjectInfo{}, keyError(err, bucket, key)
	}
	if !fi.Mode().IsRegular() {
		return store.ObjectInfo{}, noSuchKey(bucket, key)
	}
	return o.fileInfo(bucket, key, fi, true), nil
}

// Get opens the bytes r selects. Errors (missing key, changed ETag) are
// returned here, never on the first Read.
func (o *Origin) Get(ctx context.Context, bucket, key string, r store.ReadRange) (io.ReadCloser, store.ObjectInfo, error) {
	if r.Offset < 0 {
		return nil, store.ObjectInfo{}, fmt.Errorf("fs: negative read offset %d", r.Offset)
	}
	f, info, err := o.open(bucket, key)
	if err != nil {
		return nil, store.ObjectInfo{}, err
	}
	if r.ETag != "" && r.ETag != info.ETag {
		closeFile(f)
		return nil, store.ObjectInfo{}, fmt.Errorf("%w: %s/%s has ETag %s, want %s",
			store.ErrPreconditionFailed, bucket, key, info.ETag, r.ETag)
	}
	if r.Offset > info.Size {
		closeFile(f)
		return nil, store.ObjectInfo{}, fmt.Errorf("fs: offset %d beyond the end of %s/%s (%d bytes)",
			r.Offset, bucket, key, info.Size)
	}
	n := info.Size - r.Offset
	if r.Length >= 0 && r.Length < n {
		n = r.Length
	}
	if f == nil { // folder object: no file behind it
		return io.NopCloser(strings.NewReader("")), info, nil
	}
	return &sectionFile{SectionReader: io.NewSectionReader(f, r.Offset, n), f: f}, info, nil
}

// open opens the data file of bucket/key and builds the info that
// describes exactly the opened file (its own fstat, its sidecar). A folder
// object has no file: f is nil.
func (o *Origin) open(bucket, key string) (f *os.File, info store.ObjectInfo, err error) {
	br, err := o.openKey(bucket, key)
	if err != nil {
		return nil, info, err
	}
	defer br.Close()
	mu := o.keyLock(bucket, key)
	mu.RLock()
	defer mu.RUnlock()
	if isFolderKey(key) {
		info, err = o.folderInfo(br, bucket, key)
		return nil, info, err
	}
	f, err = br.Open(key)
	if err != nil {
		return nil, info, keyError(err, bucket, key)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, info, fmt.Errorf("fs: stat %s/%s: %w", bucket, key, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, info, noSuchKey(bucket, key)
	}
	return f, o.fileInfo(bucket, key, fi, true), nil
}

func closeFile(f *os.File) {
	if f != nil {
		f.Close()
	}
}

// sectionFile reads a section of a file it closes.
type sectionFile struct {
	*io.SectionReader
	f *os.File
}

func (s *sectionFile) Close() error { return s.f.Close() }

// folderInfo returns the info of a folder object "dir/": it exists while
// its directory does and its sidecar marks it.
func (o *Origin) folderInfo(br *os.Root, bucket, key string) (store.ObjectInfo, error) {
	fi, err := br.Stat(strings.TrimSuffix(key, "/"))
	if err != nil {
		return store.ObjectInfo{}, keyError(err, bucket, key)
	}
	sc := o.readSidecar(bucket, key)
	if !fi.IsDir() || sc == nil {
		return store.ObjectInfo{}, noSuchKey(bucket, key)
	}
	return store.ObjectInfo{
		Bucket: bucket, Key: key, ETag: sc.ETag,
		LastModified: time.Unix(0, sc.MTime).UTC(), ObjectMeta: sc.meta(),
	}, nil
}

// Delete removes bucket/key and its sidecar, then the directories the
// removal left empty (up to, not including, the bucket directory).
func (o *Origin) Delete(ctx context.Context, bucket, key string) error {
	br, err := o.openKey(bucket, key)
	if err != nil {
		return err
	}
	defer br.Close()
	o.bucketMu.RLock()
	defer o.bucketMu.RUnlock()
	if err := o.deleteKey(br, bucket, key); err != nil {
		return err
	}
	dir := path.Dir(key)
	if isFolderKey(key) {
		dir = strings.TrimSuffix(key, "/")
	}
	o.prune(br, bucket, dir)
	return nil
}

// deleteKey removes the file (or folder mark) and sidecar of bucket/key
// under the key's lock.
func (o *Origin) deleteKey(br *os.Root, bucket, key string) error {
	mu := o.keyLock(bucket, key)
	mu.Lock()
	defer mu.Unlock()
	if isFolderKey(key) {
		return o.removeSidecar(bucket, key)
	}
	fi, err := br.Lstat(key)
	switch {
	case err != nil && !isNotFound(err) && !isEscape(err):
		return fmt.Errorf("fs: delete %s/%s: %w", bucket, key, err)
	case err == nil && !fi.IsDir():
		if err := br.Remove(key); err != nil && !isNotFound(err) {
			return fmt.Errorf("fs: delete %s/%s: %w", bucket, key, err)
		}
	}
	if err := o.removeSidecar(bucket, key); err != nil {
		return err
	}
	if err := o.syncDir(path.Dir(bucket + "/" + key)); err != nil && !isNotFound(err) {
		return err
	}
	return nil
}

// prune removes dir and its ancestors while they are empty, real (not
// symlinked) directories that no folder object marks. Each step holds the
// lock of the folder key "dir/", so it cannot remove a directory a
// concurrent Put of that folder object has just marked; it holds one lock
// at a time, so it cannot deadlock with another Delete. A Put of a file
// below dir may still lose its fresh parent here: its commit retries.
func (o *Origin) prune(br *os.Root, bucket, dir string) {
	for dir != "." && dir != "" {
		mu := o.keyLock(bucket, dir+"/")
		mu.Lock()
		removed := o.removeEmptyDir(br, bucket, dir)
		mu.Unlock()
		if !removed {
			return
		}
		dir = path.Dir(dir)
	}
}

func (o *Origin) removeEmptyDir(br *os.Root, bucket, dir string) bool {
	if o.readSidecar(bucket, dir+"/") != nil {
		return false
	}
	fi, err := br.Lstat(dir)
	return err == nil && fi.IsDir() && br.Remove(dir) == nil
}

// Copy copies srcBucket/srcKey to dstBucket/dstKey through a new file. A
// nil meta keeps the source's metadata.
func (o *Origin) Copy(ctx context.Context, srcBucket, srcKey, dstBucket, dstKey string, meta *store.ObjectMeta) (store.ObjectInfo, error) {
	if err := o.checkTarget(dstBucket, dstKey); err != nil {
		return store.ObjectInfo{}, err
	}
	rc, src, err := o.Get(ctx, srcBucket, srcKey, store.ReadRange{Length: -1})
	if err != nil {
		return store.ObjectInfo{}, err
	}
	defer rc.Close()
	m := src.ObjectMeta
	if meta != nil {
		m = *meta
	}
	return o.Put(ctx, dstBucket, dstKey, rc, src.Size, m)
}

// openKey validates bucket and key and opens the bucket.
func (o *Origin) openKey(bucket, key string) (*os.Root, error) {
	if err := store.CheckBucketName(bucket); err != nil {
		return nil, err
	}
	if err := validKey(key); err != nil {
		return nil, err
	}
	return o.openBucket(bucket)
}

func noSuchKey(bucket, key string) error {
	return fmt.Errorf("%w: %s/%s", store.ErrNoSuchKey, bucket, key)
}

// keyError translates an os error on the path of bucket/key.
func keyError(err error, bucket, key string) error {
	switch {
	case isNotFound(err), isEscape(err):
		return noSuchKey(bucket, key)
	case errors.Is(err, syscall.ENAMETOOLONG):
		return fmt.Errorf("%w: %s/%s: name too long for the filesystem", store.ErrInvalidKey, bucket, key)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%w: %s/%s: %v", store.ErrAccessDenied, bucket, key, err)
	}
	return fmt.Errorf("fs: %s/%s: %w", bucket, key, err)
}
