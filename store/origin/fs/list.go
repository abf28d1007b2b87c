// Listing of the directory origin: the bucket's directories, with folder
// objects from their sidecars and symlinks resolved inside the bucket,
// read as a tree for the shared S3-order walk (store/internal/tree).
package fs

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/internal/tree"
)

// List returns one page of bucket's keys.
func (o *Origin) List(ctx context.Context, bucket string, opts store.ListOptions) (store.ListPage, error) {
	br, err := o.openBucket(bucket)
	if err != nil {
		return store.ListPage{}, err
	}
	defer br.Close()
	return tree.List(ctx, bucketTree{o: o, br: br, bucket: bucket}, opts)
}

// bucketTree is one bucket's directory as the shared walk reads it.
type bucketTree struct {
	o      *Origin
	br     *os.Root
	bucket string
}

// ReadDir returns the entries of dir that can be objects or hold them,
// and dir's own entry if a sidecar makes it a folder object. A missing dir
// (or one leading out of the bucket) is empty.
func (t bucketTree) ReadDir(ctx context.Context, dir string) ([]tree.Entry, *tree.Entry, error) {
	var folder *tree.Entry
	if dir != "" && t.o.readSidecar(t.bucket, dir) != nil {
		folder = &tree.Entry{Name: dir}
	}
	name := strings.TrimSuffix(dir, "/")
	if name == "" {
		name = "."
	}
	f, err := t.br.Open(name)
	if err != nil {
		if isNotFound(err) || isEscape(err) {
			return nil, folder, nil
		}
		return nil, nil, fmt.Errorf("fs: list %s/%s: %w", t.bucket, dir, err)
	}
	defer f.Close()
	des, err := f.ReadDir(-1)
	if err != nil {
		return nil, nil, fmt.Errorf("fs: list %s/%s: %w", t.bucket, dir, err)
	}
	out := make([]tree.Entry, 0, len(des))
	for _, de := range des {
		if e, ok := classify(t.br, dir, de); ok {
			out = append(out, e)
		}
	}
	return out, folder, nil
}

// Listable reports whether a path can be presented as a key.
func (t bucketTree) Listable(key string) bool { return listableKey(key) }

// Info returns the listing info of key, or false if it vanished or is not
// a regular file (or marked folder) after all. It holds the key's lock,
// so a listing racing a Put never pairs new data with an old sidecar.
func (t bucketTree) Info(key string, _ tree.Entry) (store.ObjectInfo, bool, error) {
	mu := t.o.keyLock(t.bucket, key)
	mu.RLock()
	defer mu.RUnlock()
	if isFolderKey(key) {
		info, err := t.o.folderInfo(t.br, t.bucket, key)
		return info, err == nil, nil
	}
	fi, err := t.br.Stat(key)
	if err != nil || !fi.Mode().IsRegular() {
		return store.ObjectInfo{}, false, nil
	}
	return t.o.fileInfo(t.bucket, key, fi, false), true, nil
}

// classify tells a file from a directory, resolving symlinks (through the
// bucket root, so one leading out of the bucket is dropped). Other kinds
// (sockets, devices, fifos) are never objects.
func classify(br *os.Root, dir string, de fs.DirEntry) (tree.Entry, bool) {
	t := de.Type()
	if t&fs.ModeSymlink != 0 {
		fi, err := br.Stat(dir + de.Name())
		if err != nil {
			return tree.Entry{}, false
		}
		t = fi.Mode().Type()
	}
	switch {
	case t.IsDir():
		return tree.Entry{Name: de.Name(), Dir: true}, true
	case t.IsRegular():
		return tree.Entry{Name: de.Name()}, true
	}
	return tree.Entry{}, false
}

// hasObject reports whether the bucket holds at least one object.
func (o *Origin) hasObject(ctx context.Context, br *os.Root, bucket string) (bool, error) {
	return tree.HasObject(ctx, bucketTree{o: o, br: br, bucket: bucket}, "")
}
