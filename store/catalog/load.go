// Load: replacing a prefix's entries with a complete origin listing, in
// bounded batches, reporting what changed.
package catalog

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// batchSize bounds the keys one Load transaction writes or removes, and
// the listing entries Load holds in memory at once.
const batchSize = 4096

// loadRun is one running Load. Its fields other than bucket, prefix and
// done are guarded by DB.mu.
type loadRun struct {
	bucket, prefix string
	written        map[string]struct{} // keys Put or Deleted since the Load began
	aborted        bool                // the bucket was dropped
	done           chan struct{}       // closed when the Load returns
}

// Load replaces what the catalog holds under bucket/prefix with a
// complete origin listing: next yields every object under prefix, in key
// order, then ok=false (or an error, which aborts the Load: the prefix
// stays uncovered and the catalog may hold part of the new listing).
// For every key listed or dropped, each is called (in key order, from the
// Load's goroutine) with how it changed; an error from each aborts the
// Load too. When the listing is done, bucket/prefix is covered as of at
// (the time the listing started). Writes are batched: Load never holds
// one bbolt transaction for the whole listing.
//
// Keys Put or Deleted through the node while the Load runs keep the
// write: the Load neither overwrites nor removes them, and reports them
// against what the catalog holds (the write). A listing out of order or
// outside prefix aborts the Load. Loads of overlapping prefixes of one
// bucket run one after the other. A nil each is allowed.
func (d *DB) Load(bucket, prefix string, at time.Time, next func() (Entry, bool, error), each func(Change) error) error {
	if err := checkBucket(bucket); err != nil {
		return err
	}
	if each == nil {
		each = func(Change) error { return nil }
	}
	start := time.Now()
	r, err := d.startLoad(bucket, prefix)
	if err != nil {
		return err
	}
	defer d.endLoad(r)
	l := &loader{d: d, r: r, prefix: []byte(prefix), next: next, each: each}
	if err := l.run(); err != nil {
		d.log.Debug().Err(err).Str("bucket", bucket).Str("prefix", prefix).Msg("catalog load failed")
		return err
	}
	if err := d.finishLoad(r, at); err != nil {
		return err
	}
	d.log.Debug().Str("bucket", bucket).Str("prefix", prefix).Dur("took", time.Since(start)).
		Int("added", l.counts[Added]).Int("changed", l.counts[Changed]).
		Int("unchanged", l.counts[Unchanged]).Int("removed", l.counts[Removed]).Msg("catalog loaded")
	return nil
}

// startLoad waits for overlapping Loads to end, registers the new one
// and uncovers its prefix (and the prefixes under it), in memory and
// then on disk, unless an enclosing prefix stays covered.
func (d *DB) startLoad(bucket, prefix string) (*loadRun, error) {
	for {
		d.mu.Lock()
		var wait chan struct{}
		for r := range d.runs {
			if r.bucket == bucket && (strings.HasPrefix(r.prefix, prefix) || strings.HasPrefix(prefix, r.prefix)) {
				wait = r.done
				break
			}
		}
		if wait != nil {
			d.mu.Unlock()
			<-wait
			continue
		}
		r := &loadRun{bucket: bucket, prefix: prefix, written: map[string]struct{}{}, done: make(chan struct{})}
		d.runs[r] = struct{}{}
		enclosed := false
		for p := range d.cover[bucket] {
			if len(p) < len(prefix) && strings.HasPrefix(prefix, p) {
				enclosed = true
			}
		}
		if !enclosed {
			for p := range d.cover[bucket] {
				if strings.HasPrefix(p, prefix) {
					delete(d.cover[bucket], p)
				}
			}
		}
		d.mu.Unlock()
		if enclosed {
			return r, nil
		}
		err := d.update(func(tx *bolt.Tx) error { return deleteCoverage(tx, bucket, prefix, true) })
		if err != nil {
			d.endLoad(r)
			return nil, err
		}
		return r, nil
	}
}

// endLoad unregisters r.
func (d *DB) endLoad(r *loadRun) {
	d.mu.Lock()
	delete(d.runs, r)
	d.mu.Unlock()
	close(r.done)
}

// finishLoad covers r's prefix as of at; prefixes under it are subsumed.
func (d *DB) finishLoad(r *loadRun, at time.Time) error {
	err := d.update(func(tx *bolt.Tx) error {
		if d.isAborted(r) {
			return ErrAborted
		}
		if err := deleteCoverage(tx, r.bucket, r.prefix, false); err != nil {
			return err
		}
		return tx.Bucket(bucketCoverage).Put(coverKey(r.bucket, r.prefix), encodeTime(at))
	})
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if r.aborted { // dropped after the commit: DropBucket's transaction undoes it
		return ErrAborted
	}
	for p := range d.cover[r.bucket] {
		if strings.HasPrefix(p, r.prefix) {
			delete(d.cover[r.bucket], p)
		}
	}
	d.setCoverLocked(r.bucket, r.prefix, at.UTC())
	return nil
}

func (d *DB) isAborted(r *loadRun) bool {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return r.aborted
}

// wasWritten reports whether key was written through the node since r
// began.
func (d *DB) wasWritten(r *loadRun, key []byte) bool {
	d.mu.RLock()
	defer d.mu.RUnlock()
	_, ok := r.written[string(key)]
	return ok
}

// loader is the state of one Load between its transactions. The catalog's
// keys under prefix are merged with the listing: catalog keys between two
// listed keys (or after the last) are Removed.
type loader struct {
	d      *DB
	r      *loadRun
	prefix []byte
	next   func() (Entry, bool, error)
	each   func(Change) error

	pending []Entry  // listing entries read but not yet applied
	pos     int      // pending[pos] is the next to apply
	eof     bool     // next said ok=false
	prev    string   // the last key next yielded, for the order check
	last    []byte   // catalog keys <= last are settled; nil: none yet
	changes []Change // this transaction's, delivered after it commits
	counts  [Removed + 1]int
}

// run applies the listing batch by batch until it is done.
func (l *loader) run() error {
	for {
		if l.pos == len(l.pending) && !l.eof {
			if err := l.fill(); err != nil {
				return err
			}
		}
		done := false
		err := l.d.update(func(tx *bolt.Tx) error {
			l.changes = l.changes[:0]
			var err error
			done, err = l.apply(tx)
			return err
		})
		if err != nil {
			return err
		}
		for _, c := range l.changes {
			l.counts[c.Kind]++
			if err := l.each(c); err != nil {
				return err
			}
		}
		if done {
			return nil
		}
	}
}

// fill reads up to batchSize entries from the listing, checking order.
func (l *loader) fill() error {
	l.pending, l.pos = l.pending[:0], 0
	for len(l.pending) < batchSize {
		e, ok, err := l.next()
		if err != nil {
			return err
		}
		if !ok {
			l.eof = true
			return nil
		}
		if err := checkKey(e.Key); err != nil {
			return err
		}
		if !strings.HasPrefix(e.Key, string(l.prefix)) || (l.prev != "" && e.Key <= l.prev) {
			return fmt.Errorf("%w: %q after %q under prefix %q", errLoad, e.Key, l.prev, l.prefix)
		}
		l.prev = e.Key
		l.pending = append(l.pending, e)
	}
	return nil
}

// apply merges pending entries into the catalog, at most batchSize keys
// in this transaction, and reports whether the Load is complete.
func (l *loader) apply(tx *bolt.Tx) (done bool, err error) {
	if l.d.isAborted(l.r) {
		return false, ErrAborted
	}
	b, err := tx.Bucket(bucketObjects).CreateBucketIfNotExists([]byte(l.r.bucket))
	if err != nil {
		return false, err
	}
	for budget := batchSize; budget > 0; {
		var hi []byte // removal range ends before hi; nil: at the end of prefix
		switch {
		case l.pos < len(l.pending):
			hi = []byte(l.pending[l.pos].Key)
		case !l.eof:
			return false, nil // read more of the listing first
		}
		n, complete, err := l.removeRange(b, hi, budget)
		if err != nil || !complete {
			return false, err
		}
		budget -= n
		if hi == nil {
			return true, nil
		}
		if err := l.upsert(b, l.pending[l.pos]); err != nil {
			return false, err
		}
		l.last, l.pos = hi, l.pos+1
		budget--
	}
	return false, nil
}

// removeRange removes the catalog's keys under prefix after l.last and
// before hi (nil: no bound), visiting at most budget keys; it returns how
// many it visited and whether it reached the end of the range.
func (l *loader) removeRange(b *bolt.Bucket, hi []byte, budget int) (int, bool, error) {
	c := b.Cursor()
	var k, v []byte
	if l.last == nil {
		k, v = c.Seek(l.prefix)
	} else {
		k, v = seekAfter(c, l.last)
	}
	var dels [][]byte
	n, complete := 0, true
	for ; k != nil && bytes.HasPrefix(k, l.prefix) && (hi == nil || bytes.Compare(k, hi) < 0); k, v = c.Next() {
		if n == budget {
			complete = false
			break
		}
		n++
		key := slices.Clone(k)
		l.last = key
		if l.d.wasWritten(l.r, key) {
			continue // written through the node: newer than the listing
		}
		old, err := decodeEntry(key, v)
		if err != nil {
			old = Entry{Key: string(key)} // unreadable: removed all the same
		}
		dels = append(dels, key)
		l.changes = append(l.changes, Change{Kind: Removed, Old: old})
	}
	// Deleted after the walk: deleting under a bbolt cursor skips keys.
	for _, key := range dels {
		if err := b.Delete(key); err != nil {
			return n, false, err
		}
	}
	return n, complete, nil
}

// upsert writes the listing's e unless a write through the node since the
// Load began owns the key, and records how e compares with the catalog.
func (l *loader) upsert(b *bolt.Bucket, e Entry) error {
	key := []byte(e.Key)
	ch := Change{Kind: Added, Entry: e}
	if v := b.Get(key); v != nil {
		old, err := decodeEntry(key, v)
		ch.Kind, ch.Old = Changed, old
		if err == nil && old.ETag == e.ETag && old.Size == e.Size {
			ch.Kind = Unchanged
		}
		if err == nil && sameEntry(old, e) {
			l.changes = append(l.changes, ch)
			return nil // nothing to write
		}
	}
	l.changes = append(l.changes, ch)
	if l.d.wasWritten(l.r, key) {
		return nil
	}
	return b.Put(key, encodeEntry(e))
}
