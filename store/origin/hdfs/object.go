// Reads and deletes of single objects: Stat, Get (positioned reads with
// the version checked before and after the file is opened) and Delete.
package hdfs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	hdfsclient "github.com/colinmarc/hdfs/v2"

	"github.com/granary-dev/granary/store"
)

// firstReadMax is how much of a range Get reads before it returns: enough
// to make the client fetch the block locations, so the version check after
// that covers the blocks the reader will use.
const firstReadMax = 64 << 10

// checkKey validates bucket and key.
func checkKey(bucket, key string) error {
	if err := store.CheckBucketName(bucket); err != nil {
		return err
	}
	return validKey(key)
}

// objectPath returns the HDFS path of the file that holds key: the file
// itself, or a folder's marker.
func (o *Origin) objectPath(bucket, key string) string {
	if isFolderKey(key) {
		return o.keyPath(bucket, key) + "/" + folderMarker
	}
	return o.keyPath(bucket, key)
}

// missing returns the error for a key that was not found: ErrNoSuchBucket
// if the bucket is gone too, else ErrNoSuchKey (or the bucket's error).
func (o *Origin) missing(ctx context.Context, bucket, key string) error {
	if err := o.StatBucket(ctx, bucket); err != nil {
		return err
	}
	return fmt.Errorf("%w: %s/%s", store.ErrNoSuchKey, bucket, key)
}

// statFile returns the status of the file holding key; a missing file or
// a directory is ErrNoSuchKey (or ErrNoSuchBucket).
func (o *Origin) statFile(ctx context.Context, bucket, key string) (os.FileInfo, error) {
	if err := checkKey(bucket, key); err != nil {
		return nil, err
	}
	fi, err := o.cl().Stat(o.objectPath(bucket, key))
	if err == nil && fi.IsDir() {
		err = os.ErrNotExist
	}
	if err != nil {
		if errors.Is(translate(err, nil), store.ErrNoSuchKey) {
			return nil, o.missing(ctx, bucket, key)
		}
		return nil, wrap("stat", bucket, key, err, nil)
	}
	return fi, nil
}

// Stat returns the info of bucket/key.
func (o *Origin) Stat(ctx context.Context, bucket, key string) (store.ObjectInfo, error) {
	fi, err := o.statFile(ctx, bucket, key)
	if err != nil {
		return store.ObjectInfo{}, err
	}
	rec, err := o.readRecord(o.objectPath(bucket, key))
	if err != nil {
		return store.ObjectInfo{}, wrap("stat", bucket, key, err, nil)
	}
	return objectInfo(bucket, key, fi, rec), nil
}

// Get opens a range of bucket/key. With r.ETag set, the object's ETag is
// checked when the file is opened and again once the reader holds its
// block locations, so the bytes returned are all of that version.
func (o *Origin) Get(ctx context.Context, bucket, key string, r store.ReadRange) (io.ReadCloser, store.ObjectInfo, error) {
	fi, err := o.statFile(ctx, bucket, key)
	if err != nil {
		return nil, store.ObjectInfo{}, err
	}
	p := o.objectPath(bucket, key)
	rec, err := o.readRecord(p)
	if err != nil {
		return nil, store.ObjectInfo{}, wrap("get", bucket, key, err, nil)
	}
	info := objectInfo(bucket, key, fi, rec)
	if r.ETag != "" && r.ETag != info.ETag {
		return nil, store.ObjectInfo{}, fmt.Errorf("%w: %s/%s is %s, not %s", store.ErrPreconditionFailed, bucket, key, info.ETag, r.ETag)
	}
	off := min(max(r.Offset, 0), info.Size)
	n := info.Size - off
	if r.Length >= 0 {
		n = min(n, r.Length)
	}
	if n == 0 {
		return io.NopCloser(bytes.NewReader(nil)), info, nil
	}
	cn, err := o.pool.ready() // defaults fetched before its first datanode dial
	if err != nil {
		return nil, store.ObjectInfo{}, o.readError(ctx, bucket, key, err)
	}
	f, err := cn.Open(p)
	if err != nil {
		return nil, store.ObjectInfo{}, o.readError(ctx, bucket, key, err)
	}
	if fileETag(f.Stat()) != fileETag(fi) {
		f.Close()
		return nil, store.ObjectInfo{}, fmt.Errorf("%w: %s/%s changed while opened", store.ErrPreconditionFailed, bucket, key)
	}
	if dl, ok := ctx.Deadline(); ok {
		f.SetDeadline(dl)
	}
	first, err := readFirst(f, off, min(n, firstReadMax))
	if err == nil {
		err = o.sameVersion(p, f.Stat())
	}
	if err != nil {
		f.Close()
		return nil, store.ObjectInfo{}, o.readError(ctx, bucket, key, err)
	}
	rest := &translatingReader{r: io.LimitReader(f, n-int64(len(first))), bucket: bucket, key: key}
	return &rangeReader{Reader: io.MultiReader(bytes.NewReader(first), rest), f: f}, info, nil
}

// errVersionChanged means a file was replaced while a Get opened it.
var errVersionChanged = errors.New("file changed while being opened")

// sameVersion fails with errVersionChanged unless the file at p is still
// the version fi describes.
func (o *Origin) sameVersion(p string, fi os.FileInfo) error {
	now, err := o.cl().Stat(p)
	if err != nil {
		return err
	}
	if now.IsDir() || fileETag(now) != fileETag(fi) {
		return errVersionChanged
	}
	return nil
}

// readFirst reads the first n bytes at off (n > 0).
func readFirst(f *hdfsclient.FileReader, off, n int64) ([]byte, error) {
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return nil, err
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(f, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// readError translates an error of opening or reading bucket/key.
func (o *Origin) readError(ctx context.Context, bucket, key string, err error) error {
	switch {
	case errors.Is(err, errVersionChanged), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		// The file shrank or was replaced under the reader.
		return fmt.Errorf("%w: %s/%s: %v", store.ErrPreconditionFailed, bucket, key, err)
	case errors.Is(translate(err, nil), store.ErrNoSuchKey):
		return o.missing(ctx, bucket, key)
	}
	return wrap("get", bucket, key, err, nil)
}

// rangeReader reads a range and closes the file under it.
type rangeReader struct {
	io.Reader
	f *hdfsclient.FileReader
}

func (r *rangeReader) Close() error { return r.f.Close() }

// translatingReader turns the client's read errors into store sentinels.
type translatingReader struct {
	r           io.Reader
	bucket, key string
}

func (t *translatingReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if err != nil && err != io.EOF {
		err = wrap("read", t.bucket, t.key, err, nil)
	}
	return n, err
}

// Delete removes the file of bucket/key (a folder's marker for "dir/"),
// never its directories. A missing key, or a key naming a directory, is
// not an error.
func (o *Origin) Delete(ctx context.Context, bucket, key string) error {
	if err := checkKey(bucket, key); err != nil {
		return err
	}
	p := o.objectPath(bucket, key)
	fi, err := o.cl().Stat(p)
	if err == nil && fi.IsDir() {
		return nil // a prefix, not an object
	}
	if err == nil {
		err = o.cl().Remove(p)
	}
	if err != nil && errors.Is(translate(err, nil), store.ErrNoSuchKey) {
		return o.StatBucket(ctx, bucket)
	}
	return wrap("delete", bucket, key, err, nil)
}
