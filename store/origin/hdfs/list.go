// Listing of the HDFS origin: its directory listings read as a tree for
// the shared S3-order walk (store/internal/tree).
package hdfs

import (
	"context"
	"os"
	"strings"
	"sync"

	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/internal/tree"
)

// dirReader reads directories of one bucket, by path relative to it ("" or
// "a/b/"). A missing directory is empty. It is an interface so the walk
// can be tested without a cluster.
type dirReader interface {
	readDir(ctx context.Context, dir string) ([]os.FileInfo, error)
}

// clientDirs reads directories under root through the client.
type clientDirs struct {
	o    *Origin
	root string
}

func (d clientDirs) readDir(ctx context.Context, dir string) ([]os.FileInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	fis, err := d.o.cl().ReadDir(d.root + "/" + strings.TrimSuffix(dir, "/"))
	if err != nil && sentinel(err, store.ErrNoSuchKey) == store.ErrNoSuchKey {
		return nil, nil
	}
	return fis, err
}

// dirReader returns the reader of bucket's directories.
func (o *Origin) dirReader(bucket string) dirReader {
	return clientDirs{o: o, root: o.bucketPath(bucket)}
}

// List returns one page of bucket's keys.
func (o *Origin) List(ctx context.Context, bucket string, opts store.ListOptions) (store.ListPage, error) {
	if err := o.StatBucket(ctx, bucket); err != nil {
		return store.ListPage{}, err
	}
	info := func(key string, fi os.FileInfo) (store.ObjectInfo, error) {
		rec, err := o.readRecord(o.objectPath(bucket, key))
		return objectInfo(bucket, key, fi, rec), err
	}
	page, err := listPage(ctx, o.dirReader(bucket), opts, info)
	if err != nil {
		return store.ListPage{}, wrap("list", bucket, "", err, store.ErrNoSuchBucket)
	}
	return page, nil
}

// listPage walks dr for one page; info turns a key's file status into its
// listing info (asked ahead, listPrefetch at a time: it costs a namenode
// round trip per key).
func listPage(ctx context.Context, dr dirReader, opts store.ListOptions, info infoFunc) (store.ListPage, error) {
	return tree.List(ctx, bucketTree{dr: dr, info: info, ahead: &infoAhead{got: map[string]*infoFuture{}}}, opts)
}

// listPrefetch bounds the infos asked ahead at once (0: none asked
// ahead; the benchmark's reference).
var listPrefetch = 16

// infoAhead holds the infos asked ahead during one listing.
type infoAhead struct {
	mu  sync.Mutex // guards got
	got map[string]*infoFuture
}

// infoFuture is one key's info, ready when done is closed.
type infoFuture struct {
	done chan struct{}
	info store.ObjectInfo
	err  error
}

type infoFunc func(key string, fi os.FileInfo) (store.ObjectInfo, error)

// bucketTree is a bucket's directories as the shared walk reads them.
type bucketTree struct {
	dr    dirReader
	info  infoFunc
	ahead *infoAhead // nil: no asking ahead
}

// Prefetch asks the infos of keys, listPrefetch at a time, in the
// background; Info waits for them. Each ask ends by itself (a namenode
// call), so a listing that stops early leaves none running for long.
func (t bucketTree) Prefetch(ctx context.Context, keys []string, entries []tree.Entry) {
	if t.ahead == nil || listPrefetch <= 0 {
		return
	}
	sem := make(chan struct{}, listPrefetch)
	t.ahead.mu.Lock()
	defer t.ahead.mu.Unlock()
	for i, key := range keys {
		if _, ok := t.ahead.got[key]; ok {
			continue
		}
		f := &infoFuture{done: make(chan struct{})}
		t.ahead.got[key] = f
		fi := entries[i].Info
		go func() {
			defer close(f.done)
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
			case <-ctx.Done():
				f.err = ctx.Err()
				return
			}
			f.info, f.err = t.info(key, fi)
		}()
	}
}

// ReadDir returns dir's listable entries and its folder marker, if any.
func (t bucketTree) ReadDir(ctx context.Context, dir string) ([]tree.Entry, *tree.Entry, error) {
	fis, err := t.dr.readDir(ctx, dir)
	if err != nil {
		return nil, nil, err
	}
	var folder *tree.Entry
	out := make([]tree.Entry, 0, len(fis))
	for _, fi := range fis {
		switch {
		case fi.Name() == folderMarker && !fi.IsDir():
			folder = &tree.Entry{Name: fi.Name(), Info: fi}
		case !listableName(fi.Name()):
		default:
			out = append(out, tree.Entry{Name: fi.Name(), Dir: fi.IsDir(), Info: fi})
		}
	}
	return out, folder, nil
}

// Listable reports whether a path is short enough to be a key (names
// were checked by ReadDir).
func (t bucketTree) Listable(key string) bool { return len(key) <= store.MaxKeyLen }

// Info returns key's listing info from its status (the folder marker's
// for "a/b/").
func (t bucketTree) Info(key string, e tree.Entry) (store.ObjectInfo, bool, error) {
	if t.ahead != nil {
		t.ahead.mu.Lock()
		f := t.ahead.got[key]
		t.ahead.mu.Unlock()
		if f != nil {
			<-f.done
			return f.info, f.err == nil, f.err
		}
	}
	info, err := t.info(key, e.Info)
	return info, err == nil, err
}

// hasObject reports whether the tree under dr holds at least one object.
func hasObject(ctx context.Context, dr dirReader) (bool, error) {
	return tree.HasObject(ctx, bucketTree{dr: dr}, "")
}
