// Listing of the directory origin: a depth-first walk that yields keys in
// S3 byte order, descends only into directories that can hold keys of the
// page, and stops as soon as the page is full.
package fs

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/granary-dev/granary/store"
)

const defaultMaxKeys = 1000

// List returns one page of bucket's keys.
func (o *Origin) List(ctx context.Context, bucket string, opts store.ListOptions) (store.ListPage, error) {
	br, err := o.openBucket(bucket)
	if err != nil {
		return store.ListPage{}, err
	}
	defer br.Close()
	if opts.MaxKeys <= 0 {
		opts.MaxKeys = defaultMaxKeys
	}
	l := &lister{o: o, br: br, bucket: bucket, ctx: ctx, opts: opts}
	start := opts.Prefix[:strings.LastIndex(opts.Prefix, "/")+1]
	if err := l.walk(start); err != nil {
		return store.ListPage{}, err
	}
	if l.page.IsTruncated {
		l.page.NextAfter = l.last
	}
	return l.page, nil
}

// lister builds one page. Invariant: every entry emitted sorts after
// opts.After and after every entry emitted before it.
type lister struct {
	o      *Origin
	br     *os.Root
	bucket string
	ctx    context.Context
	opts   store.ListOptions
	page   store.ListPage
	last   string // last entry (key or common prefix) in the page
	lastCP string // last common prefix in the page
	done   bool   // page full and one more entry seen: stop walking
}

// dirEntry is one name in a directory, with dirs (and symlinks to dirs)
// sorted as name+"/": that is where their keys fall in S3 order.
type dirEntry struct {
	name  string
	sort  string
	isDir bool
}

// walk visits directory dir ("" or "a/b/", relative to the bucket).
func (l *lister) walk(dir string) error {
	if err := l.ctx.Err(); err != nil {
		return err
	}
	if dir != "" && dir > l.opts.After && strings.HasPrefix(dir, l.opts.Prefix) &&
		l.o.readSidecar(l.bucket, dir) != nil {
		l.visitKey(dir, nil) // the folder object "dir/" sorts before its children
	}
	entries, err := l.readDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries[l.firstCandidate(dir, entries):] {
		if l.done {
			return nil
		}
		p := dir + e.sort
		if !strings.HasPrefix(p, l.opts.Prefix) && !strings.HasPrefix(l.opts.Prefix, p) {
			if p > l.opts.Prefix {
				return nil // sorted: nothing later can match the prefix
			}
			continue
		}
		if !e.isDir {
			l.visitKey(p, nil)
			continue
		}
		if err := l.visitDir(p); err != nil {
			return err
		}
	}
	return nil
}

// firstCandidate returns the index of the first entry of dir whose keys can
// sort after opts.After and have opts.Prefix: entries are sorted, and
// skipping the rest by binary search is what keeps later pages cheap.
func (l *lister) firstCandidate(dir string, entries []dirEntry) int {
	lo := ""
	if a := l.opts.After; strings.HasPrefix(a, dir) {
		lo = a[len(dir):]
	} else if a > dir {
		return len(entries) // every key under dir sorts before After
	}
	if p := l.opts.Prefix; strings.HasPrefix(p, dir) && p[len(dir):] > lo {
		lo = p[len(dir):]
	}
	return sort.Search(len(entries), func(i int) bool {
		e := entries[i]
		// A directory whose name+"/" is a prefix of lo holds keys >= lo.
		return e.sort >= lo || e.isDir && strings.HasPrefix(lo, e.sort)
	})
}

// visitDir handles sub-directory d ("a/b/"): rolled up into one common
// prefix when the delimiter occurs in it, else walked.
func (l *lister) visitDir(d string) error {
	if cp, ok := l.commonPrefix(d); ok {
		if cp == l.lastCP || cp <= l.opts.After {
			return nil // every key below d rolls up into cp: nothing new
		}
		has, err := l.o.hasObject(l.br, l.bucket, d)
		if err != nil || !has {
			return err
		}
		l.emit(cp, nil)
		return nil
	}
	return l.walk(d)
}

// commonPrefix returns the common prefix every key starting with p rolls
// up into, if the delimiter occurs in p after the listing's prefix.
func (l *lister) commonPrefix(p string) (string, bool) {
	d, pre := l.opts.Delimiter, l.opts.Prefix
	if d == "" || !strings.HasPrefix(p, pre) {
		return "", false
	}
	i := strings.Index(p[len(pre):], d)
	if i < 0 {
		return "", false
	}
	return p[:len(pre)+i+len(d)], true
}

// visitKey handles one key found in the walk (fi is nil when not yet
// known).
func (l *lister) visitKey(key string, fi fs.FileInfo) {
	if !strings.HasPrefix(key, l.opts.Prefix) || !listableKey(key) {
		return
	}
	if cp, ok := l.commonPrefix(key); ok {
		if cp != l.lastCP && cp > l.opts.After {
			l.emit(cp, nil)
		}
		return
	}
	if key <= l.opts.After {
		return
	}
	info, ok := l.objectInfo(key)
	if ok {
		l.emit(key, &info)
	}
}

// objectInfo returns the listing info of key, or false if it vanished or
// is not a regular file (or marked folder) after all. It holds the key's
// lock, so a listing racing a Put never pairs new data with an old sidecar.
func (l *lister) objectInfo(key string) (store.ObjectInfo, bool) {
	mu := l.o.keyLock(l.bucket, key)
	mu.RLock()
	defer mu.RUnlock()
	if isFolderKey(key) {
		info, err := l.o.folderInfo(l.br, l.bucket, key)
		return info, err == nil
	}
	fi, err := l.br.Stat(key)
	if err != nil || !fi.Mode().IsRegular() {
		return store.ObjectInfo{}, false
	}
	return l.o.fileInfo(l.bucket, key, fi, false), true
}

// emit adds a key (info != nil) or a common prefix to the page; the first
// entry beyond MaxKeys only marks the page truncated.
func (l *lister) emit(entry string, info *store.ObjectInfo) {
	if len(l.page.Objects)+len(l.page.CommonPrefixes) >= l.opts.MaxKeys {
		l.page.IsTruncated, l.done = true, true
		return
	}
	if info != nil {
		l.page.Objects = append(l.page.Objects, store.ObjectInfo{
			Key: info.Key, Size: info.Size, ETag: info.ETag, LastModified: info.LastModified,
		})
	} else {
		l.page.CommonPrefixes = append(l.page.CommonPrefixes, entry)
		l.lastCP = entry
	}
	l.last = entry
}

// readDir returns the entries of dir that can be objects or hold them,
// sorted in S3 order. A missing dir is empty.
func (l *lister) readDir(dir string) ([]dirEntry, error) {
	name := strings.TrimSuffix(dir, "/")
	if name == "" {
		name = "."
	}
	f, err := l.br.Open(name)
	if err != nil {
		if isNotFound(err) || isEscape(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("fs: list %s/%s: %w", l.bucket, dir, err)
	}
	defer f.Close()
	des, err := f.ReadDir(-1)
	if err != nil {
		return nil, fmt.Errorf("fs: list %s/%s: %w", l.bucket, dir, err)
	}
	out := make([]dirEntry, 0, len(des))
	for _, de := range des {
		if e, ok := classify(l.br, dir, de); ok {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b dirEntry) int { return strings.Compare(a.sort, b.sort) })
	return out, nil
}

// classify tells a file from a directory, resolving symlinks (through the
// bucket root, so one leading out of the bucket is dropped). Other kinds
// (sockets, devices, fifos) are never objects.
func classify(br *os.Root, dir string, de fs.DirEntry) (dirEntry, bool) {
	t := de.Type()
	if t&fs.ModeSymlink != 0 {
		fi, err := br.Stat(dir + de.Name())
		if err != nil {
			return dirEntry{}, false
		}
		t = fi.Mode().Type()
	}
	switch {
	case t.IsDir():
		return dirEntry{name: de.Name(), sort: de.Name() + "/", isDir: true}, true
	case t.IsRegular():
		return dirEntry{name: de.Name(), sort: de.Name()}, true
	}
	return dirEntry{}, false
}

// hasObject reports whether directory dir ("" or "a/b/") of the bucket
// holds at least one object, stopping at the first one found.
func (o *Origin) hasObject(br *os.Root, bucket, dir string) (bool, error) {
	if dir != "" && o.readSidecar(bucket, dir) != nil {
		return true, nil
	}
	name := strings.TrimSuffix(dir, "/")
	if name == "" {
		name = "."
	}
	f, err := br.Open(name)
	if err != nil {
		if isNotFound(err) || isEscape(err) {
			return false, nil
		}
		return false, err
	}
	defer f.Close()
	for {
		des, err := f.ReadDir(64)
		for _, de := range des {
			e, ok := classify(br, dir, de)
			if !ok {
				continue
			}
			if !e.isDir && listableKey(dir+e.name) {
				return true, nil
			}
			if e.isDir {
				if has, err := o.hasObject(br, bucket, dir+e.sort); has || err != nil {
					return has, err
				}
			}
		}
		if err != nil { // io.EOF at the end
			return false, nil
		}
	}
}
