// Reads of the catalog: one page of a listing, single entries, counts.
package catalog

import (
	"bytes"
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/granary-dev/granary/store"
)

// defaultMaxKeys is a page's size when ListOptions.MaxKeys <= 0.
const defaultMaxKeys = 1000

// objects returns bucket's nested bbolt bucket, or nil if it holds nothing.
func objects(tx *bolt.Tx, bucket string) *bolt.Bucket {
	return tx.Bucket(bucketObjects).Bucket([]byte(bucket))
}

// List answers one page as store.Origin.List would (S3 key order,
// delimiter, After, MaxKeys, common prefixes, NextAfter), from the
// catalog. The caller checks Covered(bucket, opts.Prefix) first; List
// itself answers from whatever the catalog holds.
func (d *DB) List(bucket string, opts store.ListOptions) (store.ListPage, error) {
	page, _, err := d.list(bucket, opts)
	return page, err
}

// list is List that also returns how many cursor moves the page took
// (tests check that common prefixes are skipped, not walked).
func (d *DB) list(bucket string, opts store.ListOptions) (page store.ListPage, moves int, err error) {
	limit := opts.MaxKeys
	if limit <= 0 {
		limit = defaultMaxKeys
	}
	err = d.view(func(tx *bolt.Tx) error {
		b := objects(tx, bucket)
		if b == nil {
			return nil
		}
		w := walker{c: b.Cursor(), prefix: []byte(opts.Prefix), delim: []byte(opts.Delimiter), after: opts.After}
		defer func() { moves = w.moves }()
		n, last := 0, ""
		for {
			it, ok, err := w.next()
			if err != nil || !ok {
				return err
			}
			if n == limit { // one more entry exists: the page is truncated
				page.IsTruncated, page.NextAfter = true, last
				return nil
			}
			if it.prefix != "" {
				page.CommonPrefixes = append(page.CommonPrefixes, it.prefix)
				last = it.prefix
			} else {
				page.Objects = append(page.Objects, it.info)
				last = it.info.Key
			}
			n++
		}
	})
	return page, moves, err
}

// walker yields the entries of a listing in order: keys under prefix and,
// with a delimiter, common prefixes, each once, all greater than after.
// Keys under a common prefix are skipped with one Seek, never walked.
type walker struct {
	c      *bolt.Cursor
	prefix []byte
	delim  []byte
	after  string

	started bool
	k, v    []byte // the cursor's position: the next key to consider
	moves   int    // cursor Seeks and Nexts so far
}

// item is a key (info set) or a common prefix (prefix set).
type item struct {
	info   store.ObjectInfo
	prefix string
}

// next returns the next item, or ok=false at the end of the listing.
func (w *walker) next() (it item, ok bool, err error) {
	if !w.started {
		w.started = true
		start := w.prefix
		if w.after >= string(w.prefix) {
			start = []byte(w.after)
		}
		w.k, w.v = w.c.Seek(start)
		w.moves++
	}
	for w.k != nil && bytes.HasPrefix(w.k, w.prefix) {
		if len(w.delim) > 0 {
			if i := bytes.Index(w.k[len(w.prefix):], w.delim); i >= 0 {
				cp := string(w.k[:len(w.prefix)+i+len(w.delim)])
				w.skipUnder([]byte(cp))
				if cp <= w.after {
					continue
				}
				return item{prefix: cp}, true, nil
			}
		}
		if string(w.k) <= w.after {
			w.k, w.v = w.c.Next()
			w.moves++
			continue
		}
		e, err := decodeEntry(w.k, w.v)
		if err != nil {
			return item{}, false, err
		}
		w.k, w.v = w.c.Next()
		w.moves++
		return item{info: store.ObjectInfo{Key: e.Key, Size: e.Size, ETag: e.ETag, LastModified: e.LastModified}}, true, nil
	}
	return item{}, false, nil
}

// skipUnder moves the cursor past every key that starts with p.
func (w *walker) skipUnder(p []byte) {
	end := prefixEnd(p)
	if end == nil {
		w.k, w.v = nil, nil
		return
	}
	w.k, w.v = w.c.Seek(end)
	w.moves++
}

// Get returns the entry of bucket/key, if the catalog holds one.
func (d *DB) Get(bucket, key string) (Entry, bool, error) {
	var e Entry
	var found bool
	err := d.view(func(tx *bolt.Tx) error {
		b := objects(tx, bucket)
		if b == nil || key == "" {
			return nil
		}
		v := b.Get([]byte(key))
		if v == nil {
			return nil
		}
		var err error
		e, err = decodeEntry([]byte(key), v)
		found = err == nil
		return err
	})
	return e, found, err
}

// Count returns how many objects, and how many bytes, the catalog holds
// under bucket/prefix.
func (d *DB) Count(bucket, prefix string) (n, total int64, err error) {
	err = d.view(func(tx *bolt.Tx) error {
		n, total = 0, 0
		b := objects(tx, bucket)
		if b == nil {
			return nil
		}
		p := []byte(prefix)
		c := b.Cursor()
		for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
			if len(v) < 2 {
				return fmt.Errorf("%w: entry of %q", ErrCorrupt, k)
			}
			size, m := binary.Uvarint(v[1:])
			if m <= 0 {
				return fmt.Errorf("%w: size of %q", ErrCorrupt, k)
			}
			n++
			total += int64(size)
		}
		return nil
	})
	return n, total, err
}
