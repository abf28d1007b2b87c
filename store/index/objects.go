// Whole-unit queries: which objects a unit holds chunks of (the disk tier
// asks when it judges whether a unit is pinned), and how many bytes each
// unit holds per bucket (asked at Open).
package index

import (
	"bytes"
	"encoding/binary"

	bolt "go.etcd.io/bbolt"
)

// UnitObjects calls fn once for each distinct object (bucket, key) that
// has a live chunk in unit, in key order, until fn returns false. A chunk
// is live in unit if its entry still points there; reverse entries that
// are malformed or stale are skipped. fn runs inside a read transaction:
// it must be quick and must not call into the index.
//
// Chunks of one object are contiguous in the reverse map (its keys are the
// unit then the chunk key, which starts with the object prefix), so the
// cost is one cursor step per chunk plus one entry lookup per chunk until
// its object has been reported.
func (d *DB) UnitObjects(unit uint64, fn func(bucket, key string) bool) error {
	err := d.db.View(func(tx *bolt.Tx) error {
		chunks := tx.Bucket(bucketChunks)
		prefix := unitPrefix(unit)
		var last []byte // object prefix of the last object reported
		c := tx.Bucket(bucketUnits).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			ck := k[len(prefix):]
			n, ok := objectPrefixLen(ck)
			if !ok || last != nil && bytes.Equal(ck[:n], last) {
				continue
			}
			if loc, err := decodeLocation(chunks.Get(ck)); err != nil || loc.Unit != unit {
				continue // stale reverse entry
			}
			id, err := ParseChunkKey(ck)
			if err != nil {
				continue
			}
			last = bytes.Clone(ck[:n])
			if !fn(id.Bucket, id.Key) {
				return nil
			}
		}
		return nil
	})
	return d.wrap(err)
}

// objectPrefixLen returns the length of the object prefix (bucket and
// key) that starts chunk key k.
func objectPrefixLen(k []byte) (int, bool) {
	_, rest, ok := readString(k)
	if !ok {
		return 0, false
	}
	_, rest, ok = readString(rest)
	if !ok {
		return 0, false
	}
	return len(k) - len(rest), true
}

// UnitBucketBytes returns, per unit and per bucket, the sum of the
// lengths of the chunks indexed there (the disk tier rebuilds its
// per-bucket counts from it at Open). It reads every entry once, in key
// order; malformed entries are skipped.
func (d *DB) UnitBucketBytes() (map[uint64]map[string]int64, error) {
	out := make(map[uint64]map[string]int64)
	err := d.db.View(func(tx *bolt.Tx) error {
		var lastRaw []byte // bucket name bytes of the previous entry
		var last string
		c := tx.Bucket(bucketChunks).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			loc, err := decodeLocation(v)
			if err != nil {
				continue
			}
			n, w := binary.Uvarint(k)
			if w <= 0 || n > uint64(len(k)-w) {
				continue
			}
			// Chunks of a bucket are contiguous: convert its name once.
			if raw := k[w : w+int(n)]; lastRaw == nil || !bytes.Equal(raw, lastRaw) {
				lastRaw, last = bytes.Clone(raw), string(raw)
			}
			m := out[loc.Unit]
			if m == nil {
				m = make(map[string]int64)
				out[loc.Unit] = m
			}
			m[last] += loc.Length
		}
		return nil
	})
	return out, d.wrap(err)
}
