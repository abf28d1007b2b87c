// Directories: lookups, streamed listings (ListObjectsV2 with delimiter
// "/", one page in flight), and the bounded cache of recent listings.
package fuse

import (
	"container/list"
	"context"
	"errors"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

const (
	// maxCachedDir is the largest listing kept whole in the cache;
	// larger directories are streamed every time and looked up by HEAD.
	maxCachedDir = 50_000
	// maxCachedEntries bounds the entries of all cached listings
	// together (roughly 150 bytes each).
	maxCachedEntries = 200_000
)

// dirEntry is one child of a listed directory.
type dirEntry struct {
	name string
	dir  bool
	info objInfo
}

// dirListing is a complete listing of one directory, immutable once in
// the cache.
type dirListing struct {
	prefix  string
	entries []dirEntry
	index   map[string]int // name -> position in entries
	at      time.Time      // when the listing started
	elem    *list.Element  // in dirCache.lru
}

// dirCache holds the complete listings of recently read directories,
// answering for the metadata TTL, least recently used first out once it
// holds more than maxCachedEntries entries.
type dirCache struct {
	ttl time.Duration

	mu    sync.Mutex // guards m, lru, total and changed
	m     map[string]*dirListing
	lru   *list.List // of *dirListing, most recently used at the front
	total int        // entries over all listings in m
	// changed is when the mount last changed a directory: listings
	// started before it may miss the change and are not cached.
	changed time.Time
	// refreshing holds the prefixes being listed again (dirrefresh.go);
	// each channel is closed when its listing is done.
	refreshing map[string]chan struct{}
}

func newDirCache(ttl time.Duration) *dirCache {
	return &dirCache{ttl: ttl, m: map[string]*dirListing{}, lru: list.New(), refreshing: map[string]chan struct{}{}}
}

// Freshness of a cached listing.
const (
	absent = iota // none cached
	fresh         // younger than half the TTL
	due           // younger than the TTL, due for a refresh
	stale         // older than the TTL: only a hint that a refresh pays
)

// get returns the listing of prefix and its freshness. A stale listing
// stays cached (until pushed out or replaced) but must not answer.
func (c *dirCache) get(prefix string) (*dirListing, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.m[prefix]
	if l == nil {
		return nil, absent
	}
	c.lru.MoveToFront(l.elem)
	switch age := time.Since(l.at); {
	case age >= c.ttl:
		return l, stale
	case age >= c.ttl/2:
		return l, due
	}
	return l, fresh
}

// put caches a complete listing of prefix taken at at. Where S3 shows
// an object and a prefix of the same name, the object wins, as in
// lookups (HEAD first).
func (c *dirCache) put(prefix string, entries []dirEntry, at time.Time) {
	if len(entries) > maxCachedDir {
		return
	}
	l := &dirListing{prefix: prefix, at: at, index: make(map[string]int, len(entries))}
	for _, e := range entries {
		if i, dup := l.index[e.name]; dup {
			if l.entries[i].dir && !e.dir {
				l.entries[i] = e
			}
			continue
		}
		l.index[e.name] = len(l.entries)
		l.entries = append(l.entries, e)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if at.Before(c.changed) {
		return
	}
	if old := c.m[prefix]; old != nil {
		c.removeLocked(old)
	}
	l.elem = c.lru.PushFront(l)
	c.m[prefix] = l
	c.total += len(l.entries)
	for c.total > maxCachedEntries {
		c.removeLocked(c.lru.Back().Value.(*dirListing))
	}
}

// drop forgets the listing of prefix after the mount changed it, and
// keeps listings in progress from being cached.
func (c *dirCache) drop(prefix string) {
	c.mu.Lock()
	c.changed = time.Now()
	c.mu.Unlock()
	c.forget(prefix)
}

// forget drops the listing of prefix, if any.
func (c *dirCache) forget(prefix string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l := c.m[prefix]; l != nil {
		c.removeLocked(l)
	}
}

func (c *dirCache) removeLocked(l *dirListing) {
	c.lru.Remove(l.elem)
	delete(c.m, l.prefix)
	c.total -= len(l.entries)
}

// Lookup finds name in d: in d's cached listing while it is fresh, else
// as an object (HEAD) and then as a prefix (a listing of one key).
func (d *dirNode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if !validName(name) {
		return nil, syscall.ENOENT
	}
	if n, ok := d.childFile(name); ok && n.stageNow() != nil {
		// Being written: S3 may not have it yet.
		return d.child(ctx, name, false, objInfo{}, out), 0
	}
	if l := d.lookupListing(ctx); l != nil {
		i, ok := l.index[name]
		if !ok {
			return nil, syscall.ENOENT
		}
		e := l.entries[i]
		return d.child(ctx, e.name, e.dir, e.info, out), 0
	}
	info, err := d.fsys.cl.head(ctx, d.prefix+name)
	if err == nil {
		return d.child(ctx, name, false, info, out), 0
	}
	if !errors.Is(err, errNotFound) {
		return nil, d.fsys.errno("lookup", err)
	}
	isDir, err := d.fsys.cl.isPrefix(ctx, d.prefix+name+"/")
	if err != nil {
		return nil, d.fsys.errno("lookup", err)
	}
	if !isDir {
		return nil, syscall.ENOENT
	}
	return d.child(ctx, name, true, objInfo{}, out), 0
}

// OpendirHandle returns a stream over the directory's children.
func (d *dirNode) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	return &dirHandle{d: d}, 0, 0
}

// dirHandle streams one directory: from the cached listing if fresh when
// the stream starts, else from S3 a page at a time, collecting the
// entries for the cache as it goes.
type dirHandle struct {
	d *dirNode

	mu      sync.Mutex // guards the fields below
	started bool
	cached  *dirListing // the listing served, if from the cache
	lst     *listing    // the listing in progress, if from S3
	at      time.Time   // when lst started
	build   []dirEntry  // lst's entries so far; nil once too many
	pos     int         // entries handed out so far
	last    dirEntry    // the last entry handed out
	done    bool        // the listing has ended
	// pending are the files being written, not yet uploaded, that the
	// listing has not shown yet.
	pending map[string]dirEntry
}

var (
	_ fs.FileReaddirenter = (*dirHandle)(nil)
	_ fs.FileLookuper     = (*dirHandle)(nil)
	_ fs.FileSeekdirer    = (*dirHandle)(nil)
	_ fs.FileReleasedirer = (*dirHandle)(nil)
)

// Readdirent returns the next child, or nil at the end.
func (h *dirHandle) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok, err := h.nextLocked()
	if err != nil {
		return nil, h.d.fsys.errno("readdir", err)
	}
	if !ok {
		return nil, 0
	}
	h.last = e
	h.pos++
	de := &fuse.DirEntry{Name: e.name, Mode: fuse.S_IFREG, Ino: inoOf(h.d.prefix+e.name, false)}
	if e.dir {
		de.Mode = fuse.S_IFDIR
		de.Ino = inoOf(h.d.prefix+e.name+"/", true)
	}
	return de, 0
}

// nextLocked returns the listing's next entry, then the files being
// written that it did not have.
func (h *dirHandle) nextLocked() (dirEntry, bool, error) {
	if !h.started && !h.d.fsys.opts.ReadOnly {
		h.pending = h.d.staged()
	}
	if !h.done {
		e, ok, err := h.listNextLocked()
		if ok {
			delete(h.pending, e.name)
		}
		if ok || err != nil {
			return e, ok, err
		}
	}
	for name, e := range h.pending {
		delete(h.pending, name)
		return e, true, nil
	}
	return dirEntry{}, false, nil
}

// listNextLocked returns the listing's next entry; done is set at its
// end.
func (h *dirHandle) listNextLocked() (dirEntry, bool, error) {
	if !h.started {
		h.started = true
		if h.cached = h.d.listed(); h.cached == nil {
			h.at = time.Now()
			h.lst = h.d.fsys.cl.list(h.d.fsys.ctx, h.d.prefix)
			h.build = make([]dirEntry, 0, 64)
		}
	}
	if h.done {
		return dirEntry{}, false, nil
	}
	if h.cached != nil {
		if h.pos >= len(h.cached.entries) {
			h.done = true
			return dirEntry{}, false, nil
		}
		return h.cached.entries[h.pos], true, nil
	}
	name, dir, info, ok, err := h.lst.entry()
	if err != nil || !ok {
		h.done = true
		h.lst.close()
		if err == nil && h.build != nil {
			h.d.fsys.dirs.put(h.d.prefix, h.build, h.at)
		}
		h.build = nil
		return dirEntry{}, false, err
	}
	e := dirEntry{name: name, dir: dir, info: info}
	if h.build != nil {
		if len(h.build) < maxCachedDir {
			h.build = append(h.build, e)
		} else {
			h.build = nil // too large to cache
		}
	}
	return e, true, nil
}

// Lookup serves READDIRPLUS: name is the entry just handed out, whose
// attributes came with the listing.
func (h *dirHandle) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	h.mu.Lock()
	e := h.last
	h.mu.Unlock()
	if e.name != name {
		return h.d.Lookup(ctx, name, out)
	}
	return h.d.child(ctx, e.name, e.dir, e.info, out), 0
}

// Seekdir restarts the stream and skips off entries (rewinddir is
// Seekdir(0)).
func (h *dirHandle) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.resetLocked()
	for uint64(h.pos) < off {
		_, ok, err := h.nextLocked()
		if err != nil {
			return h.d.fsys.errno("seekdir", err)
		}
		if !ok {
			break
		}
		h.pos++
	}
	return 0
}

func (h *dirHandle) resetLocked() {
	if h.lst != nil && !h.done {
		h.lst.close()
	}
	h.started, h.cached, h.lst, h.build, h.pending = false, nil, nil, nil, nil
	h.pos, h.last, h.done = 0, dirEntry{}, false
}

// Releasedir ends a listing still in progress.
func (h *dirHandle) Releasedir(ctx context.Context, releaseFlags uint32) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.resetLocked()
	h.done = true
}
