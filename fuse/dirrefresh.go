// Refreshing cached listings: a directory in use is listed again in the
// background once its listing is past half the metadata TTL, and a
// lookup that finds the listing past the TTL waits for a new one, so
// lookups in a listed directory cost one LIST page per thousand names
// instead of a HEAD per name.
package fuse

import (
	"context"
	"time"
)

// listed returns d's cached listing if it may answer (younger than the
// TTL), starting a background refresh once it is past half the TTL.
func (d *dirNode) listed() *dirListing {
	switch l, st := d.fsys.dirs.get(d.prefix); st {
	case fresh:
		return l
	case due:
		d.refreshing()
		return l
	}
	return nil
}

// lookupListing is listed for a lookup: where the listing is past the
// TTL (the directory was listed before, so it is likely in use), it
// lists d again and waits for that. nil means: ask S3 about the name.
func (d *dirNode) lookupListing(ctx context.Context) *dirListing {
	l, st := d.fsys.dirs.get(d.prefix)
	switch st {
	case fresh:
		return l
	case due:
		d.refreshing()
		return l
	case stale:
		select {
		case <-d.refreshing():
		case <-ctx.Done():
			return nil
		}
		return d.listed()
	}
	return nil
}

// refreshing returns a channel closed when the refresh of d's listing
// ends, starting one unless one is running.
func (d *dirNode) refreshing() <-chan struct{} {
	c := d.fsys.dirs
	c.mu.Lock()
	defer c.mu.Unlock()
	done, ok := c.refreshing[d.prefix]
	if !ok {
		done = make(chan struct{})
		c.refreshing[d.prefix] = done
		go d.refresh(done)
	}
	return done
}

// refresh lists d whole and caches the listing. If the listing fails or
// the directory has grown too large to cache, the old listing is
// dropped: lookups then ask S3 about each name.
func (d *dirNode) refresh(done chan struct{}) {
	f := d.fsys
	defer func() {
		f.dirs.mu.Lock()
		delete(f.dirs.refreshing, d.prefix)
		f.dirs.mu.Unlock()
		close(done)
	}()
	at := time.Now()
	entries, err := d.listAll()
	if err != nil || entries == nil {
		if err != nil {
			f.log.Debug().Err(err).Str("prefix", d.prefix).Msg("fuse: listing refresh failed")
		}
		f.dirs.forget(d.prefix)
		return
	}
	f.dirs.put(d.prefix, entries, at)
}

// listAll returns every child of d, or nil if there are more than
// maxCachedDir.
func (d *dirNode) listAll() ([]dirEntry, error) {
	lst := d.fsys.cl.list(d.fsys.ctx, d.prefix)
	defer lst.close()
	entries := []dirEntry{}
	for {
		name, dir, info, ok, err := lst.entry()
		if err != nil || !ok {
			return entries, err
		}
		if len(entries) == maxCachedDir {
			return nil, nil
		}
		entries = append(entries, dirEntry{name: name, dir: dir, info: info})
	}
}
