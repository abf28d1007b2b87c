// Package tree lists a bucket stored as a directory tree (the directory and
// HDFS origins) in S3 order: a depth-first walk that sorts each directory
// with sub-directories as name+"/" (where their keys fall), skips by binary
// search to the first entry a page can use, descends only into directories
// that can hold keys of the page, and stops once the page is full. At most
// one directory listing per level of the walk is held in memory.
package tree

import (
	"context"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/granary-dev/granary/store"
)

// DefaultMaxKeys is a page's size when ListOptions.MaxKeys is 0.
const DefaultMaxKeys = 1000

// Entry is one name in a directory: a file (a key) or a directory.
type Entry struct {
	Name string
	Dir  bool
	// Info is what the tree read of the entry (may be nil); the walk
	// hands it back to Tree.Info.
	Info os.FileInfo
}

// sortName is where the entry's keys fall in S3 order.
func (e Entry) sortName() string {
	if e.Dir {
		return e.Name + "/"
	}
	return e.Name
}

// Tree is a bucket seen as a directory tree, by paths relative to the
// bucket ("" or "a/b/" for directories).
type Tree interface {
	// ReadDir returns the entries of dir that can be keys or hold them,
	// in any order, and dir's own entry if dir is a folder object ("a/b/"
	// stored as an object). A missing dir is empty.
	ReadDir(ctx context.Context, dir string) (entries []Entry, folder *Entry, err error)
	// Listable reports whether a path the walk found can be shown as a key.
	Listable(key string) bool
	// Info returns key's listing info, e being its entry (a folder's for
	// "a/b/"), or false if it turned out not to be an object after all.
	Info(key string, e Entry) (store.ObjectInfo, bool, error)
}

// Prefetcher is a Tree whose Info is worth asking ahead (a round trip per
// key): before the walk visits a directory's keys one by one, it names
// the ones the page may list, in order, so their infos can be fetched at
// once. Info is still called for each, in order.
type Prefetcher interface {
	Prefetch(ctx context.Context, keys []string, entries []Entry)
}

// List returns one page of t's keys.
func List(ctx context.Context, t Tree, opts store.ListOptions) (store.ListPage, error) {
	if opts.MaxKeys <= 0 {
		opts.MaxKeys = DefaultMaxKeys
	}
	l := &lister{t: t, ctx: ctx, opts: opts}
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
	t      Tree
	ctx    context.Context
	opts   store.ListOptions
	page   store.ListPage
	last   string // last entry (key or common prefix) in the page
	lastCP string // last common prefix in the page
	done   bool   // page full and one more entry seen: stop walking
}

// readSorted returns dir's entries in S3 order, and its folder entry.
func readSorted(ctx context.Context, t Tree, dir string) ([]Entry, *Entry, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	entries, folder, err := t.ReadDir(ctx, dir)
	if err != nil {
		return nil, nil, err
	}
	slices.SortFunc(entries, func(a, b Entry) int { return strings.Compare(a.sortName(), b.sortName()) })
	return entries, folder, nil
}

// walk visits directory dir ("" or "a/b/").
func (l *lister) walk(dir string) error {
	entries, folder, err := readSorted(l.ctx, l.t, dir)
	if err != nil {
		return err
	}
	if folder != nil && dir != "" {
		if err := l.visitKey(dir, *folder); err != nil { // "dir/" sorts before its children
			return err
		}
	}
	first := l.firstCandidate(dir, entries)
	if pf, ok := l.t.(Prefetcher); ok {
		if keys, es := l.upcoming(dir, entries[first:]); len(keys) > 0 {
			pf.Prefetch(l.ctx, keys, es)
		}
	}
	for _, e := range entries[first:] {
		if l.done {
			return nil
		}
		p := dir + e.sortName()
		if !strings.HasPrefix(p, l.opts.Prefix) && !strings.HasPrefix(l.opts.Prefix, p) {
			if p > l.opts.Prefix {
				return nil // sorted: nothing later can match the prefix
			}
			continue
		}
		if !e.Dir {
			err = l.visitKey(p, e)
		} else {
			err = l.visitDir(p)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// upcoming returns the keys among entries (of dir, sorted) that the page
// may list as objects, in order, at most the room left in the page, with
// their entries.
func (l *lister) upcoming(dir string, entries []Entry) ([]string, []Entry) {
	room := l.opts.MaxKeys - len(l.page.Objects) - len(l.page.CommonPrefixes)
	var keys []string
	var es []Entry
	for _, e := range entries {
		if len(keys) >= room {
			break
		}
		p := dir + e.sortName()
		if !strings.HasPrefix(p, l.opts.Prefix) {
			if p > l.opts.Prefix {
				break
			}
			continue
		}
		if e.Dir || p <= l.opts.After || !l.t.Listable(p) {
			continue
		}
		if _, rolled := l.commonPrefix(p); rolled {
			continue
		}
		keys = append(keys, p)
		es = append(es, e)
	}
	return keys, es
}

// firstCandidate returns the index of the first entry of dir whose keys can
// sort after opts.After and have opts.Prefix: entries are sorted, and
// skipping the rest by binary search is what keeps later pages cheap.
func (l *lister) firstCandidate(dir string, entries []Entry) int {
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
		return e.sortName() >= lo || e.Dir && strings.HasPrefix(lo, e.sortName())
	})
}

// visitDir handles sub-directory d ("a/b/"): rolled up into one common
// prefix when the delimiter occurs in it, else walked.
func (l *lister) visitDir(d string) error {
	if cp, ok := l.commonPrefix(d); ok {
		if cp == l.lastCP || cp <= l.opts.After {
			return nil // every key below d rolls up into cp: nothing new
		}
		has, err := HasObject(l.ctx, l.t, d)
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
func (l *lister) visitKey(key string, e Entry) error {
	if !strings.HasPrefix(key, l.opts.Prefix) || !l.t.Listable(key) {
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
	if l.full() {
		l.emit(key, nil) // only marks the page truncated
		return nil
	}
	info, ok, err := l.t.Info(key, e)
	if err != nil || !ok {
		return err
	}
	l.emit(key, &info)
	return nil
}

func (l *lister) full() bool {
	return len(l.page.Objects)+len(l.page.CommonPrefixes) >= l.opts.MaxKeys
}

// emit adds a key (info != nil) or a common prefix to the page; the first
// entry beyond MaxKeys only marks the page truncated.
func (l *lister) emit(entry string, info *store.ObjectInfo) {
	if l.full() {
		l.page.IsTruncated, l.done = true, true
		return
	}
	if info != nil {
		l.page.Objects = append(l.page.Objects, store.ObjectInfo{
			Key: entry, Size: info.Size, ETag: info.ETag, LastModified: info.LastModified,
		})
	} else {
		l.page.CommonPrefixes = append(l.page.CommonPrefixes, entry)
		l.lastCP = entry
	}
	l.last = entry
}

// HasObject reports whether directory dir ("" or "a/b/") of t holds at
// least one object, stopping at the first one found: a folder object, a
// listable file, else the first sub-directory that holds one.
func HasObject(ctx context.Context, t Tree, dir string) (bool, error) {
	entries, folder, err := readSorted(ctx, t, dir)
	if err != nil || folder != nil && dir != "" {
		return err == nil, err
	}
	for _, e := range entries {
		if !e.Dir && t.Listable(dir+e.Name) {
			return true, nil
		}
	}
	for _, e := range entries {
		if e.Dir {
			if has, err := HasObject(ctx, t, dir+e.sortName()); has || err != nil {
				return has, err
			}
		}
	}
	return false, nil
}
