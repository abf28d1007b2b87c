// Reverse-map queries: which objects a unit holds chunks of (the disk
// tier asks when it judges whether a unit is pinned).
package index

import (
	"bytes"

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
