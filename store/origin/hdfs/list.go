// Listing of the HDFS origin: a depth-first walk over directory listings
// that yields keys in S3 byte order, descends only into directories that
// can hold keys of the page, and stops once the page is full. At most one
// directory listing per level of the walk is held in memory.
package hdfs

import (
	"context"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/granary-dev/granary/store"
)

const defaultMaxKeys = 1000

// entry is one name in a directory, with directories sorted as name+"/":
// that is where their keys fall in S3 order.
type entry struct {
	name  string
	sort  string
	isDir bool
	fi    os.FileInfo
}

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
// listing info.
func listPage(ctx context.Context, dr dirReader, opts store.ListOptions, info infoFunc) (store.ListPage, error) {
	if opts.MaxKeys <= 0 {
		opts.MaxKeys = defaultMaxKeys
	}
	l := &lister{dr: dr, ctx: ctx, opts: opts, info: info}
	start := opts.Prefix[:strings.LastIndex(opts.Prefix, "/")+1]
	if err := l.walk(start); err != nil {
		return store.ListPage{}, err
	}
	if l.page.IsTruncated {
		l.page.NextAfter = l.last
	}
	return l.page, nil
}

type infoFunc func(key string, fi os.FileInfo) (store.ObjectInfo, error)

// lister builds one page. Invariant: every entry emitted sorts after
// opts.After and after every entry emitted before it.
type lister struct {
	dr     dirReader
	ctx    context.Context
	opts   store.ListOptions
	info   infoFunc
	page   store.ListPage
	last   string // last entry (key or common prefix) in the page
	lastCP string // last common prefix in the page
	done   bool   // page full and one more entry seen: stop walking
}

// walk visits directory dir ("" or "a/b/").
func (l *lister) walk(dir string) error {
	entries, marker, err := readEntries(l.ctx, l.dr, dir)
	if err != nil {
		return err
	}
	if marker != nil && dir != "" {
		if err := l.visitKey(dir, marker); err != nil { // "dir/" sorts before its children
			return err
		}
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
			err = l.visitKey(p, e.fi)
		} else {
			err = l.visitDir(p)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// readEntries returns the listable entries of dir sorted in S3 order, and
// the status of its folder marker, if any.
func readEntries(ctx context.Context, dr dirReader, dir string) ([]entry, os.FileInfo, error) {
	fis, err := dr.readDir(ctx, dir)
	if err != nil {
		return nil, nil, err
	}
	var marker os.FileInfo
	out := make([]entry, 0, len(fis))
	for _, fi := range fis {
		switch {
		case fi.Name() == folderMarker && !fi.IsDir():
			marker = fi
		case !listableName(fi.Name()):
		case fi.IsDir():
			out = append(out, entry{name: fi.Name(), sort: fi.Name() + "/", isDir: true, fi: fi})
		default:
			out = append(out, entry{name: fi.Name(), sort: fi.Name(), fi: fi})
		}
	}
	slices.SortFunc(out, func(a, b entry) int { return strings.Compare(a.sort, b.sort) })
	return out, marker, nil
}

// firstCandidate returns the index of the first entry of dir whose keys can
// sort after opts.After and have opts.Prefix (entries are sorted).
func (l *lister) firstCandidate(dir string, entries []entry) int {
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
		has, err := hasObjectIn(l.ctx, l.dr, d)
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

// visitKey handles one key found in the walk.
func (l *lister) visitKey(key string, fi os.FileInfo) error {
	if !strings.HasPrefix(key, l.opts.Prefix) || len(key) > store.MaxKeyLen {
		return nil
	}
	if cp, ok := l.commonPrefix(key); ok {
		if cp != l.lastCP && cp > l.opts.After {
			l.emit(cp, nil)
		}
		return nil
	}
	if key <= l.opts.After {
		return nil
	}
	if len(l.page.Objects)+len(l.page.CommonPrefixes) >= l.opts.MaxKeys {
		l.emit(key, nil) // only marks the page truncated
		return nil
	}
	info, err := l.info(key, fi)
	if err != nil {
		return err
	}
	l.emit(key, &info)
	return nil
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

// hasObject reports whether the tree under dr holds at least one object.
func hasObject(ctx context.Context, dr dirReader) (bool, error) {
	return hasObjectIn(ctx, dr, "")
}

// hasObjectIn reports whether directory dir ("" or "a/b/") holds at least
// one object, stopping at the first one found.
func hasObjectIn(ctx context.Context, dr dirReader, dir string) (bool, error) {
	entries, marker, err := readEntries(ctx, dr, dir)
	if err != nil || marker != nil && dir != "" {
		return err == nil, err
	}
	for _, e := range entries {
		if !e.isDir && len(dir+e.name) <= store.MaxKeyLen {
			return true, nil
		}
	}
	for _, e := range entries {
		if e.isDir {
			if has, err := hasObjectIn(ctx, dr, dir+e.sort); has || err != nil {
				return has, err
			}
		}
	}
	return false, nil
}
