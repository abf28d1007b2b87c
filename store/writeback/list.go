// Listing: the origin's page overlaid with the pending operations of the
// bucket, so staged objects are listed and deleted ones are not, in S3
// order and with correct paging.
package writeback

import (
	"context"
	"slices"
	"strings"

	"github.com/granary-dev/granary/store"
)

const defaultMaxKeys = 1000

// entry is one item of a listing: an object or a common prefix.
type entry struct {
	name string
	cp   bool
	info store.ObjectInfo // objects only
}

// overlay is the pending state of a bucket's keys under a listing's
// prefix, copied out of the Log: puts (with their info) and deletes.
type overlay struct {
	puts    map[string]store.ObjectInfo
	deletes map[string]bool
}

// snapshotOverlay copies the pending operations of bucket under prefix.
func (l *Log) snapshotOverlay(bucket, prefix string) overlay {
	ov := overlay{puts: map[string]store.ObjectInfo{}, deletes: map[string]bool{}}
	l.mu.Lock()
	defer l.mu.Unlock()
	for key, ks := range l.byBucket[bucket] {
		o := ks.latest()
		if o == nil || !strings.HasPrefix(key, prefix) {
			continue
		}
		if o.Kind == kindDelete {
			ov.deletes[key] = true
		} else {
			ov.puts[key] = o.Info
		}
	}
	return ov
}

// rollUp returns the listing entry of key under opts: the key itself or
// the common prefix it rolls into.
func rollUp(key string, opts store.ListOptions) (string, bool) {
	if opts.Delimiter != "" {
		if i := strings.Index(key[len(opts.Prefix):], opts.Delimiter); i >= 0 {
			return key[:len(opts.Prefix)+i+len(opts.Delimiter)], true
		}
	}
	return key, false
}

func (l *Log) List(ctx context.Context, bucket string, opts store.ListOptions) (store.ListPage, error) {
	ov := l.snapshotOverlay(bucket, opts.Prefix)
	if len(ov.puts) == 0 && len(ov.deletes) == 0 {
		return l.origin.List(ctx, bucket, opts)
	}
	if opts.MaxKeys <= 0 {
		opts.MaxKeys = defaultMaxKeys
	}
	var out []entry
	after := opts.After
	for {
		o := opts
		o.After = after
		page, err := l.origin.List(ctx, bucket, o)
		if err != nil {
			return store.ListPage{}, err
		}
		// The origin's page covers (after, hi]: everything after it when
		// it is the last page.
		hi, last := page.NextAfter, !page.IsTruncated
		if !last && hi <= after {
			last = true // an origin page that does not advance: stop here
		}
		merged, err := l.merge(ctx, bucket, opts, ov, page, after, hi, last)
		if err != nil {
			return store.ListPage{}, err
		}
		out = append(out, merged...)
		if len(out) >= opts.MaxKeys || last {
			return toPage(out, opts.MaxKeys, !last), nil
		}
		after = hi
	}
}

// merge returns the entries in (after, hi] (hi unbounded when last): the
// origin page's, less deleted keys and prefixes left empty by deletes,
// with pending puts added or replacing the origin's; in order.
func (l *Log) merge(ctx context.Context, bucket string, opts store.ListOptions, ov overlay,
	page store.ListPage, after, hi string, last bool) ([]entry, error) {
	byName := make(map[string]entry)
	for _, obj := range page.Objects {
		if !ov.deletes[obj.Key] {
			byName[obj.Key] = entry{name: obj.Key, info: obj}
		}
	}
	for _, cp := range page.CommonPrefixes {
		alive, err := l.prefixAlive(ctx, bucket, cp, ov)
		if err != nil {
			return nil, err
		}
		if alive {
			byName[cp] = entry{name: cp, cp: true}
		}
	}
	for key, info := range ov.puts {
		name, cp := rollUp(key, opts)
		if name <= after || !last && name > hi {
			continue
		}
		if cp {
			byName[name] = entry{name: name, cp: true}
		} else {
			byName[name] = entry{name: name, info: listedInfo(info)}
		}
	}
	out := make([]entry, 0, len(byName))
	for _, e := range byName {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b entry) int { return strings.Compare(a.name, b.name) })
	return out, nil
}

// listedInfo is what a listing shows of an object.
func listedInfo(info store.ObjectInfo) store.ObjectInfo {
	return store.ObjectInfo{Key: info.Key, Size: info.Size, ETag: info.ETag, LastModified: info.LastModified}
}

// prefixAlive reports whether the origin's common prefix cp still holds a
// key once pending deletes apply: trivially when none applies under it,
// else by listing the origin under cp until a key not deleted shows.
// (Pending puts under cp are added to the listing separately.)
func (l *Log) prefixAlive(ctx context.Context, bucket, cp string, ov overlay) (bool, error) {
	deleted := false
	for key := range ov.deletes {
		if strings.HasPrefix(key, cp) {
			deleted = true
			break
		}
	}
	if !deleted {
		return true, nil
	}
	opts := store.ListOptions{Prefix: cp}
	for {
		page, err := l.origin.List(ctx, bucket, opts)
		if err != nil {
			return false, err
		}
		for _, obj := range page.Objects {
			if !ov.deletes[obj.Key] {
				return true, nil
			}
		}
		if !page.IsTruncated {
			return false, nil
		}
		opts.After = page.NextAfter
	}
}

// toPage cuts the first max entries into a page; it is truncated if
// entries were cut or more may follow.
func toPage(all []entry, max int, more bool) store.ListPage {
	var p store.ListPage
	if len(all) > max {
		all, more = all[:max], true
	}
	for _, e := range all {
		if e.cp {
			p.CommonPrefixes = append(p.CommonPrefixes, e.name)
		} else {
			p.Objects = append(p.Objects, e.info)
		}
	}
	if more && len(all) > 0 {
		p.IsTruncated = true
		p.NextAfter = all[len(all)-1].name
	}
	return p
}
