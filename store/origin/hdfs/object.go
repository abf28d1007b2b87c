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
	"sync"

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
	return o.checkFile(ctx, bucket, key, fi, err)
}

// checkFile turns the answer to a stat (or an open) of key's file into
// the status of an object: a missing file or a directory is ErrNoSuchKey
// (or ErrNoSuchBucket).
func (o *Origin) checkFile(ctx context.Context, bucket, key string, fi os.FileInfo, err error) (os.FileInfo, error) {
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

// withRecord runs stat (a namenode call on the file at p, whose errors it
// returns as they are) while the file's record is read over another
// client of the pool, so the two cost one round trip, not two. A record
// of another version than the one stat found (the file was replaced
// between the two calls) is read again; an error reading it is op's.
func (o *Origin) withRecord(op, bucket, key, p string, stat func() (os.FileInfo, error)) (os.FileInfo, *record, error) {
	type answer struct {
		rec *record
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		rec, err := o.readRecord(p)
		ch <- answer{rec, err}
	}()
	fi, err := stat()
	a := <-ch
	if err != nil {
		return nil, nil, err
	}
	if a.err == nil && a.rec != nil && a.rec.Version != fileETag(fi) {
		a.rec, a.err = o.readRecord(p)
	}
	if a.err != nil {
		return nil, nil, wrap(op, bucket, key, a.err, nil)
	}
	return fi, a.rec, nil
}

// statRecord returns the status of the file holding key and its record,
// in one round trip (withRecord).
func (o *Origin) statRecord(ctx context.Context, bucket, key string) (os.FileInfo, *record, error) {
	if err := checkKey(bucket, key); err != nil {
		return nil, nil, err
	}
	p := o.objectPath(bucket, key)
	return o.withRecord("stat", bucket, key, p, func() (os.FileInfo, error) {
		fi, err := o.cl().Stat(p)
		return o.checkFile(ctx, bucket, key, fi, err)
	})
}

// Stat returns the info of bucket/key.
func (o *Origin) Stat(ctx context.Context, bucket, key string) (store.ObjectInfo, error) {
	fi, rec, err := o.statRecord(ctx, bucket, key)
	if err != nil {
		return store.ObjectInfo{}, err
	}
	return objectInfo(bucket, key, fi, rec), nil
}

// Get opens a range of bucket/key. With r.ETag set, the object's ETag is
// checked when the file is opened. Whatever r.ETag, the file is checked
// again once the reader holds its block locations, so the bytes returned
// are all of the version the info names. The read holds a reader's
// client of the pool until it is closed.
func (o *Origin) Get(ctx context.Context, bucket, key string, r store.ReadRange) (io.ReadCloser, store.ObjectInfo, error) {
	if err := checkKey(bucket, key); err != nil {
		return nil, store.ObjectInfo{}, err
	}
	cn, err := o.pool.take(ctx)
	if err != nil {
		return nil, store.ObjectInfo{}, wrap("get", bucket, key, fmt.Errorf("waiting for a free client: %w", err), nil)
	}
	body, info, err := o.get(ctx, cn, bucket, key, r)
	if err != nil {
		o.pool.put(cn)
		return nil, store.ObjectInfo{}, err
	}
	if body == nil {
		o.pool.put(cn)
		return io.NopCloser(bytes.NewReader(nil)), info, nil
	}
	body.done = func() { o.pool.put(cn) }
	return body, info, nil
}

// get is Get over the reader's client cn: a nil reader for an empty
// range, whose file it closed.
func (o *Origin) get(ctx context.Context, cn *conn, bucket, key string, r store.ReadRange) (*rangeReader, store.ObjectInfo, error) {
	p := o.objectPath(bucket, key)
	f, info, err := o.open(ctx, cn, bucket, key, p)
	if err != nil {
		return nil, store.ObjectInfo{}, err
	}
	if r.ETag != "" && r.ETag != info.ETag {
		f.Close()
		return nil, store.ObjectInfo{}, fmt.Errorf("%w: %s/%s is %s, not %s", store.ErrPreconditionFailed, bucket, key, info.ETag, r.ETag)
	}
	off := min(max(r.Offset, 0), info.Size)
	n := info.Size - off
	if r.Length >= 0 {
		n = min(n, r.Length)
	}
	if n == 0 {
		f.Close()
		return nil, info, nil
	}
	if dl, ok := ctx.Deadline(); ok {
		f.SetDeadline(dl)
	}
	if afterOpen != nil {
		afterOpen()
	}
	first, err := o.readChecked(cn, f, p, off, min(n, firstReadMax))
	if err != nil {
		f.Close()
		return nil, store.ObjectInfo{}, o.readError(ctx, bucket, key, err)
	}
	rest := &translatingReader{r: io.LimitReader(f, n-int64(len(first))), bucket: bucket, key: key}
	return &rangeReader{Reader: io.MultiReader(bytes.NewReader(first), rest), f: f}, info, nil
}

// afterOpen, set only by tests before any read, runs between a read's
// open and its first block lookup.
var afterOpen func()

// readChecked reads the first n bytes at off (readFirst) and checks that
// the file at p is still the version f opened (sameVersion). The check
// starts at the client's first datanode dial, so it runs beside the
// datanode's round trips rather than after them: the reader has its
// block locations by then, which is all the check must follow.
func (o *Origin) readChecked(cn *conn, f *hdfsclient.FileReader, p string, off, n int64) ([]byte, error) {
	checked := make(chan error, 1)
	start := func() { go func() { checked <- o.sameVersion(p, f.Stat()) }() }
	cn.dialed.Store(&start)
	first, err := readFirst(f, off, n)
	var verr error
	if cn.dialed.Swap(nil) == nil {
		verr = <-checked // the dial started the check
	} else if err == nil {
		verr = o.sameVersion(p, f.Stat()) // read with no dial: check now
	}
	if err == nil {
		err = verr
	}
	return first, err
}

// open opens the file at p (key's) over the reader's client cn, with its
// record: the open's status and the record come in one round trip
// (withRecord), and the open's status is the version the reader reads.
func (o *Origin) open(ctx context.Context, cn *conn, bucket, key, p string) (*hdfsclient.FileReader, store.ObjectInfo, error) {
	if err := cn.fetchDefaults(); err != nil { // before its first datanode dial
		return nil, store.ObjectInfo{}, o.readError(ctx, bucket, key, err)
	}
	var f *hdfsclient.FileReader // open once stat returned no error
	fi, rec, err := o.withRecord("get", bucket, key, p, func() (os.FileInfo, error) {
		opened, err := cn.c.Open(p)
		if err != nil {
			return nil, o.readError(ctx, bucket, key, err)
		}
		fi, err := o.checkFile(ctx, bucket, key, opened.Stat(), nil)
		if err != nil {
			opened.Close()
			return nil, err
		}
		f = opened
		return fi, nil
	})
	if err != nil {
		if f != nil {
			f.Close()
		}
		return nil, store.ObjectInfo{}, err
	}
	return f, objectInfo(bucket, key, fi, rec), nil
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

// rangeReader reads a range and closes the file under it, then calls
// done (if set) once.
type rangeReader struct {
	io.Reader
	f    *hdfsclient.FileReader
	done func()
	once sync.Once
}

func (r *rangeReader) Close() error {
	err := r.f.Close()
	r.once.Do(func() {
		if r.done != nil {
			r.done()
		}
	})
	return err
}

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
