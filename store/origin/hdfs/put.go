// Writes of the HDFS origin: a Put (and a multipart completion) writes a
// temp file in the target's directory, closes it (retrying while the
// namenode waits for block replication), records metadata on it and
// renames it over the target, so readers see the old file or the new one.
package hdfs

import (
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"time"

	hdfsclient "github.com/colinmarc/hdfs/v2"

	"github.com/granary-dev/granary/store"
)

// Close retries while the namenode answers "replicating": backoff from
// closeBackoff, doubling, at most closeAttempts attempts.
const (
	closeAttempts = 8
	closeBackoff  = 50 * time.Millisecond
)

// Put stores body as bucket/key, all or nothing.
func (o *Origin) Put(ctx context.Context, bucket, key string, body io.Reader, size int64, meta store.ObjectMeta) (store.ObjectInfo, error) {
	if err := checkKey(bucket, key); err != nil {
		return store.ObjectInfo{}, err
	}
	if err := o.StatBucket(ctx, bucket); err != nil {
		return store.ObjectInfo{}, err
	}
	if isFolderKey(key) {
		if size > 0 {
			return store.ObjectInfo{}, fmt.Errorf("%w: folder key %s/%s must be empty", store.ErrInvalidKey, bucket, key)
		}
		if err := o.cl().MkdirAll(o.keyPath(bucket, key), dirPerm); err != nil {
			return store.ObjectInfo{}, o.writeError(bucket, key, err)
		}
	}
	rec := &record{Meta: meta.Normalized(), sum: md5.New()}
	return o.write(ctx, bucket, key, io.TeeReader(body, rec.sum), size, rec)
}

// write stages body next to the object's file and renames it into place.
// rec.Meta and rec.ETag are stored with it (rec.Version is filled here).
func (o *Origin) write(ctx context.Context, bucket, key string, body io.Reader, size int64, rec *record) (store.ObjectInfo, error) {
	target := o.objectPath(bucket, key)
	if fi, err := o.cl().Stat(target); err == nil && fi.IsDir() {
		return store.ObjectInfo{}, conflict(bucket, key)
	}
	dir := path.Dir(target)
	if err := o.cl().MkdirAll(dir, dirPerm); err != nil {
		return store.ObjectInfo{}, o.writeError(bucket, key, err)
	}
	tmp := dir + "/" + tmpPrefix + randHex(8)
	fi, err := o.stage(ctx, tmp, body, size)
	if err == nil && rec.sum != nil {
		rec.ETag = hex.EncodeToString(rec.sum.Sum(nil))
	}
	if err == nil && (rec.ETag != "" || !isDefaultMeta(rec.Meta)) {
		rec.Version = fileETag(fi)
		err = o.writeRecord(tmp, rec)
	}
	if err == nil {
		err = o.cl().Rename(tmp, target)
	}
	if err != nil {
		o.cl().Remove(tmp) // best effort: an orphan temp is invisible
		if errors.Is(err, store.ErrIncompleteBody) || errors.Is(err, store.ErrUnavailable) {
			return store.ObjectInfo{}, fmt.Errorf("hdfs: put %s/%s: %w", bucket, key, err)
		}
		return store.ObjectInfo{}, o.writeError(bucket, key, err)
	}
	if o.noXAttrs.Load() {
		rec = nil // nothing was recorded: report what Stat will see
	}
	// The renamed file keeps its ID and mtime: fi still describes it.
	return objectInfo(bucket, key, fi, rec), nil
}

// stage writes body to a new file tmp and closes it. A body shorter than
// size is store.ErrIncompleteBody. On error tmp may exist; the caller
// removes it.
func (o *Origin) stage(ctx context.Context, tmp string, body io.Reader, size int64) (os.FileInfo, error) {
	w, err := o.create(tmp)
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		w.SetDeadline(dl)
	}
	var n int64
	if size >= 0 {
		n, err = io.CopyN(w, body, size)
		if errors.Is(err, io.EOF) {
			err = fmt.Errorf("%w: got %d of %d bytes", store.ErrIncompleteBody, n, size)
		}
	} else {
		_, err = io.Copy(w, body)
	}
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		w.Close() // releases the lease; the caller removes tmp
		return nil, err
	}
	if err := closeWriter(ctx, w); err != nil {
		return nil, err
	}
	return o.cl().Stat(tmp)
}

// create opens a new file with the configured replication and block size,
// or the cluster's defaults.
func (o *Origin) create(p string) (*hdfsclient.FileWriter, error) {
	cn, err := o.pool.ready()
	if err != nil {
		return nil, err
	}
	if o.opts.Replication > 0 && o.opts.BlockSize > 0 {
		return cn.CreateFile(p, o.opts.Replication, o.opts.BlockSize, filePerm)
	}
	return cn.Create(p)
}

// closeWriter closes w, retrying with backoff (bounded) while the namenode
// has not yet seen the last block replicated.
func closeWriter(ctx context.Context, w *hdfsclient.FileWriter) error {
	wait := closeBackoff
	for attempt := 1; ; attempt++ {
		err := w.Close()
		if err == nil || !hdfsclient.IsErrReplicating(err) || attempt == closeAttempts {
			if hdfsclient.IsErrReplicating(err) {
				return fmt.Errorf("%w: file still replicating after %d closes", store.ErrUnavailable, attempt)
			}
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
		wait *= 2
	}
}

// writeError translates an error of a write to bucket/key: a path that
// runs through a file, or a target that is a directory, is a conflict.
func (o *Origin) writeError(bucket, key string, err error) error {
	switch exceptionOf(err) {
	case excParentNotDir:
		return conflict(bucket, key)
	}
	if errors.Is(err, os.ErrExist) || errors.Is(err, errDirTarget) {
		return conflict(bucket, key)
	}
	return wrap("put", bucket, key, err, store.ErrNoSuchBucket)
}

var errDirTarget = errors.New("target is a directory")

// conflict is the error of a key that is, or lies under, another kind of
// path than it needs (a file where a directory is, or the reverse).
func conflict(bucket, key string) error {
	return fmt.Errorf("%w: %s/%s conflicts with an object or prefix on the file system", store.ErrInvalidKey, bucket, key)
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
