// Writes through the node, bucket drops and coverage bookkeeping.
package catalog

import (
	"errors"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Put records an object written through the node.
func (d *DB) Put(bucket string, e Entry) error {
	if err := checkBucket(bucket); err != nil {
		return err
	}
	if err := checkKey(e.Key); err != nil {
		return err
	}
	if !d.noteWrite(bucket, e.Key) {
		return nil
	}
	v := encodeEntry(e)
	return d.update(func(tx *bolt.Tx) error {
		b, err := tx.Bucket(bucketObjects).CreateBucketIfNotExists([]byte(bucket))
		if err != nil {
			return err
		}
		return b.Put([]byte(e.Key), v)
	})
}

// Delete records an object deleted through the node.
func (d *DB) Delete(bucket, key string) error {
	if checkBucket(bucket) != nil || checkKey(key) != nil {
		return nil // the catalog cannot hold it
	}
	if !d.noteWrite(bucket, key) {
		return nil
	}
	return d.update(func(tx *bolt.Tx) error {
		b := objects(tx, bucket)
		if b == nil {
			return nil
		}
		return b.Delete([]byte(key))
	})
}

// noteWrite reports whether a write of bucket/key must reach the file:
// the key lies in a covered prefix or under a running Load. It records
// the key in every running Load that covers it, so those Loads leave it
// alone: the write is newer than their listings. The record is made
// before the write's transaction, so a Load batch either sees it or
// commits before the write does (bbolt serialises writers).
func (d *DB) noteWrite(bucket, key string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, apply := d.coveredLocked(bucket, key)
	for r := range d.runs {
		if r.bucket == bucket && strings.HasPrefix(key, r.prefix) {
			r.written[key] = struct{}{}
			apply = true
		}
	}
	return apply
}

// DropBucket forgets the bucket's entries and coverage (bucket deleted).
// Loads of the bucket that are running fail with ErrAborted.
func (d *DB) DropBucket(bucket string) error {
	// Uncover in memory first: a LIST racing with the drop goes to the
	// origin rather than to entries about to vanish.
	d.mu.Lock()
	delete(d.cover, bucket)
	for r := range d.runs {
		if r.bucket == bucket {
			r.aborted = true
		}
	}
	d.mu.Unlock()
	return d.update(func(tx *bolt.Tx) error {
		err := tx.Bucket(bucketObjects).DeleteBucket([]byte(bucket))
		if err != nil && !errors.Is(err, berrors.ErrBucketNotFound) {
			return err
		}
		return deleteCoverage(tx, bucket, "", true)
	})
}

// deleteCoverage deletes the coverage records of bucket whose prefix
// starts with prefix (prefix itself only if self).
func deleteCoverage(tx *bolt.Tx, bucket, prefix string, self bool) error {
	cov := tx.Bucket(bucketCoverage)
	from := coverKey(bucket, prefix)
	var dels [][]byte
	c := cov.Cursor()
	for k, _ := c.Seek(from); k != nil && strings.HasPrefix(string(k), string(from)); k, _ = c.Next() {
		if self || len(k) > len(from) {
			dels = append(dels, slices.Clone(k))
		}
	}
	for _, k := range dels {
		if err := cov.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// readCoverage fills d.cover from the file (at Open).
func (d *DB) readCoverage(tx *bolt.Tx) error {
	return tx.Bucket(bucketCoverage).ForEach(func(k, v []byte) error {
		bucket, prefix, ok := splitCoverKey(k)
		if !ok {
			return ErrCorrupt
		}
		at, err := decodeTime(v)
		if err != nil {
			return err
		}
		d.setCoverLocked(bucket, prefix, at)
		return nil
	})
}

// setCoverLocked records bucket/prefix as covered as of at. d.mu is held
// (or d is not shared yet).
func (d *DB) setCoverLocked(bucket, prefix string, at time.Time) {
	m := d.cover[bucket]
	if m == nil {
		m = map[string]time.Time{}
		d.cover[bucket] = m
	}
	m[prefix] = at
}

// coveredLocked returns the load time of the longest covered prefix of
// key (a key or a listing prefix) in bucket. d.mu is held.
func (d *DB) coveredLocked(bucket, key string) (at time.Time, ok bool) {
	best := -1
	for p, t := range d.cover[bucket] {
		if len(p) > best && strings.HasPrefix(key, p) {
			best, at, ok = len(p), t, true
		}
	}
	return at, ok
}

// Covered reports whether bucket/prefix lies within a covered prefix and
// when the Load that covered it listed the origin. When several covered
// prefixes enclose it, the longest (the most specific Load) answers.
func (d *DB) Covered(bucket, prefix string) (at time.Time, ok bool) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.coveredLocked(bucket, prefix)
}

// Coverage lists the covered prefixes, of every bucket if bucket is "",
// sorted by bucket and prefix.
func (d *DB) Coverage(bucket string) ([]Coverage, error) {
	d.closeMu.RLock()
	closed := d.closed
	d.closeMu.RUnlock()
	if closed {
		return nil, ErrClosed
	}
	d.mu.RLock()
	var out []Coverage
	for b, m := range d.cover {
		if bucket != "" && b != bucket {
			continue
		}
		for p, at := range m {
			out = append(out, Coverage{Bucket: b, Prefix: p, At: at})
		}
	}
	d.mu.RUnlock()
	slices.SortFunc(out, func(x, y Coverage) int {
		if c := strings.Compare(x.Bucket, y.Bucket); c != 0 {
			return c
		}
		return strings.Compare(x.Prefix, y.Prefix)
	})
	return out, nil
}
