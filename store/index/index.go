// Package index is the disk tier's chunk index in bbolt: chunk ID ->
// location of its bytes (segment + offset + length, or chunk file) and
// their CRC32C, plus a reverse map unit -> chunks so a whole segment can be
// dropped without scanning the index.
//
// Durability: the database is opened with NoSync. A cache does not need
// its index fsynced: writers put a chunk's bytes in place before its index
// entry, every read verifies the CRC32C, and an entry that points at bytes
// lost in a crash therefore fails the check and is dropped, never served.
// A transaction is still atomic while the OS survives; after a power loss
// the file may be unreadable, which Open reports as ErrCorrupt so the
// caller can start the cache afresh.
package index

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/internal/boltdb"
)

// Errors of the index. Nothing above this package sees a bbolt error.
var (
	ErrClosed  = errors.New("index: closed")
	ErrLocked  = errors.New("index: database locked by another process")
	ErrCorrupt = errors.New("index: database file corrupt")
	ErrIO      = errors.New("index: storage error")
)

// MaxKeyLen is the longest chunk key bbolt accepts (with the reverse
// entry's 8-byte unit prefix); IDs whose ChunkKey is longer cannot be
// indexed.
const MaxKeyLen = bolt.MaxKeySize - 8

var (
	bucketChunks = []byte("chunks") // ChunkKey -> Location
	bucketUnits  = []byte("units")  // unitKey(unit, ChunkKey) -> empty
	bucketMeta   = []byte("meta")
	keyCount     = []byte("count") // number of entries in bucketChunks
)

// DB is an open index. It is safe for concurrent use; bbolt serialises
// writers and lets readers run in parallel.
type DB struct {
	db    *bolt.DB
	count atomic.Int64 // mirrors keyCount of the last committed write

	// Group commit (see commit.go). closeMu guards closed and sends on
	// writes: writers hold it shared while they enqueue, Close exclusively
	// while it closes the queue.
	closeMu sync.RWMutex
	closed  bool
	writes  chan writeReq
	stopped chan struct{} // closed when the committer has exited
	// inserters is Options.Inserters; lingerFor is how long a batch of
	// inserts may wait for more (lingerFor; tests set it).
	inserters int
	lingerFor time.Duration
	// lingered counts the batches that waited for more inserts (tests
	// read it).
	lingered atomic.Int64
	// present filters out lookups of absent chunks (presence.go);
	// builds counts its builds running. closing is set as Close
	// begins: builds stop, and lookups ask bbolt, which tells of it.
	present presence
	builds  sync.WaitGroup
	closing atomic.Bool
	// lookupTxs counts the lookups that opened a transaction, and
	// beforeCommit runs between an insert's first filter add and its
	// commit (tests read and set them).
	lookupTxs    atomic.Int64
	beforeCommit func()
}

// Options configure an index.
type Options struct {
	// Inserters, above one, says that inserts come from a pool of that
	// many goroutines, each waiting for its insert's commit before its
	// next (the disk filler's workers). Every batch of inserts then
	// waits up to lingerFor for the others, and commits once it holds
	// one from each: a cold pass's inserts arrive a few a millisecond,
	// further apart than a commit takes, so without the wait most
	// paid a commit of their own. A lone goroutine inserting one chunk
	// after another would wait at each. Zero or one: a batch waits only
	// after a batch of several writes, and a writer alone never waits.
	Inserters int
}

// Open opens or creates the index file at path.
func Open(path string, o Options) (*DB, error) {
	db, err := boltdb.Open(path, boltdb.Errors{Locked: ErrLocked, Corrupt: ErrCorrupt, IO: ErrIO})
	if err != nil {
		return nil, err
	}
	d := &DB{db: db, inserters: o.Inserters, lingerFor: lingerFor}
	var n int64
	err = db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketChunks, bucketUnits, bucketMeta} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		n = readCount(tx)
		return nil
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("%w: init %s: %v", ErrIO, path, err)
	}
	d.count.Store(n)
	d.writes = make(chan writeReq, maxBatch)
	d.stopped = make(chan struct{})
	go d.commitLoop()
	d.rebuildPresence()
	return d, nil
}

// Close commits queued writes, stops the committer and closes the
// database after in-flight transactions end. Later calls fail with
// ErrClosed; closing twice is harmless.
func (d *DB) Close() error {
	d.closing.Store(true)
	d.closeMu.Lock()
	if d.closed {
		d.closeMu.Unlock()
		return nil
	}
	d.closed = true
	close(d.writes)
	d.closeMu.Unlock()
	<-d.stopped
	d.builds.Wait()
	return d.wrap(d.db.Close())
}

// Count returns the number of indexed chunks.
func (d *DB) Count() int64 { return d.count.Load() }

// wrap translates a bbolt error into this package's vocabulary.
func (d *DB) wrap(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, berrors.ErrDatabaseNotOpen), errors.Is(err, berrors.ErrTxClosed):
		return ErrClosed
	case errors.Is(err, ErrMalformed):
		return err
	default:
		return fmt.Errorf("%w: %v", ErrIO, err)
	}
}

// Lookup returns id's location, or store.ErrNotFound (without a
// transaction when the presence filter rules id out).
func (d *DB) Lookup(id store.ChunkID) (Location, error) {
	k := ChunkKey(id)
	if !d.closing.Load() && d.present.absent(k) {
		return Location{}, store.ErrNotFound
	}
	var loc Location
	d.lookupTxs.Add(1)
	err := d.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketChunks).Get(k)
		if v == nil {
			return store.ErrNotFound
		}
		var err error
		loc, err = decodeLocation(v)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return Location{}, store.ErrNotFound
	}
	return loc, d.wrap(err)
}

// Insert indexes id at loc and reports whether it wrote. admit runs inside
// the write transaction with id's current location (nil if none); the
// entry is written only if it returns true. A nil admit inserts only when
// id is absent. Because bbolt serialises writers, admit can check,
// atomically with respect to every other index write, that loc's unit
// still exists and that an old entry is stale. Among concurrent inserts,
// it may wait up to a millisecond to share their commit (see lingerFor).
func (d *DB) Insert(id store.ChunkID, loc Location, admit func(old *Location) bool) (bool, error) {
	k := ChunkKey(id)
	if len(k) > MaxKeyLen {
		return false, fmt.Errorf("%w: chunk key of %d bytes", store.ErrInvalidKey, len(k))
	}
	inserted := false
	d.present.add(k, false) // before the entry is visible
	if d.beforeCommit != nil {
		d.beforeCommit()
	}
	err := d.insert(func(tx *bolt.Tx) (int64, error) {
		inserted = false // fn may run twice (see update)
		chunks := tx.Bucket(bucketChunks)
		v := chunks.Get(k)
		exists := v != nil
		var old *Location // nil if absent or unreadable (then it is overwritten)
		if o, err := decodeLocation(v); err == nil {
			old = &o
		}
		if admit == nil && old != nil || admit != nil && !admit(old) {
			return 0, nil
		}
		added := int64(1)
		if exists {
			added = 0
		}
		if old != nil {
			if err := tx.Bucket(bucketUnits).Delete(unitKey(old.Unit, k)); err != nil {
				return 0, err
			}
		}
		if err := chunks.Put(k, loc.encode()); err != nil {
			return 0, err
		}
		if err := tx.Bucket(bucketUnits).Put(unitKey(loc.Unit, k), []byte{}); err != nil {
			return 0, err
		}
		inserted = true
		return added, nil
	})
	// Again once committed: a filter being built from a snapshot taken
	// before the commit gets the key this way (presence.go).
	if d.present.add(k, inserted) {
		d.rebuildPresence()
	}
	return inserted, err
}

// Remove drops id's entry if it still points at loc (an entry re-put
// elsewhere meanwhile is kept). It reports whether it removed one.
func (d *DB) Remove(id store.ChunkID, loc Location) (bool, error) {
	k := ChunkKey(id)
	removed := false
	err := d.update(func(tx *bolt.Tx) (int64, error) {
		removed = false
		chunks := tx.Bucket(bucketChunks)
		cur, err := decodeLocation(chunks.Get(k))
		if err != nil || cur != loc {
			return 0, nil
		}
		if err := deleteEntry(tx, k, loc.Unit); err != nil {
			return 0, err
		}
		removed = true
		return -1, nil
	})
	return removed, err
}

// deleteEntry deletes a chunk entry and its reverse entry.
func deleteEntry(tx *bolt.Tx, chunkKey []byte, unit uint64) error {
	if err := tx.Bucket(bucketChunks).Delete(chunkKey); err != nil {
		return err
	}
	return tx.Bucket(bucketUnits).Delete(unitKey(unit, chunkKey))
}

// DeleteObject drops every entry of every version of bucket/key and
// returns the locations it dropped.
func (d *DB) DeleteObject(bucket, key string) ([]Location, error) {
	prefix := ObjectPrefix(bucket, key)
	var dropped []Location
	err := d.update(func(tx *bolt.Tx) (int64, error) {
		dropped = nil
		keys, vals := scanPrefix(tx.Bucket(bucketChunks), prefix)
		for i, k := range keys {
			loc, err := decodeLocation(vals[i])
			if err != nil { // unreadable: drop the entry; its reverse key goes with its unit
				if err := tx.Bucket(bucketChunks).Delete(k); err != nil {
					return 0, err
				}
				continue
			}
			if err := deleteEntry(tx, k, loc.Unit); err != nil {
				return 0, err
			}
			dropped = append(dropped, loc)
		}
		return -int64(len(keys)), nil
	})
	return dropped, err
}

// scanPrefix returns copies of the keys and values of b under prefix
// (copies: bbolt's slices die with the transaction, and deleting while a
// cursor walks skips entries).
func scanPrefix(b *bolt.Bucket, prefix []byte) (keys, vals [][]byte) {
	c := b.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		keys = append(keys, bytes.Clone(k))
		vals = append(vals, bytes.Clone(v))
	}
	return keys, vals
}

// DropUnits drops every entry located in one of units and returns how
// many chunk entries it removed.
func (d *DB) DropUnits(units []uint64) (int, error) {
	var removed int
	err := d.update(func(tx *bolt.Tx) (int64, error) {
		removed = 0
		chunks, rev := tx.Bucket(bucketChunks), tx.Bucket(bucketUnits)
		for _, u := range units {
			rks, _ := scanPrefix(rev, unitPrefix(u))
			for _, rk := range rks {
				ck := rk[8:]
				if loc, err := decodeLocation(chunks.Get(ck)); err == nil && loc.Unit == u {
					if err := chunks.Delete(ck); err != nil {
						return 0, err
					}
					removed++
				}
				if err := rev.Delete(rk); err != nil {
					return 0, err
				}
			}
		}
		return -int64(removed), nil
	})
	return removed, err
}

// Versions returns the ETags of bucket/key that have entries, in key order.
func (d *DB) Versions(bucket, key string) ([]string, error) {
	prefix := ObjectPrefix(bucket, key)
	var vs []string
	err := d.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketChunks).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			etag, ok := etagAfter(k[len(prefix):])
			if ok && (len(vs) == 0 || vs[len(vs)-1] != etag) {
				vs = append(vs, etag)
			}
		}
		return nil
	})
	return vs, d.wrap(err)
}

// Held returns the bytes indexed for the version etag of bucket/key (a
// prefix scan of its chunks; their bytes are not read).
func (d *DB) Held(bucket, key, etag string) (int64, error) {
	prefix := appendString(ObjectPrefix(bucket, key), etag)
	var n int64
	err := d.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketChunks).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if loc, err := decodeLocation(v); err == nil {
				n += loc.Length
			}
		}
		return nil
	})
	return n, d.wrap(err)
}

// Units returns, ascending, every unit some entry points into. It seeks
// from one unit to the next, so its cost grows with the number of units,
// not of chunks.
func (d *DB) Units() ([]uint64, error) {
	var units []uint64
	err := d.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketUnits).Cursor()
		for k, _ := c.First(); k != nil; {
			if len(k) < 8 {
				k, _ = c.Next() // malformed; DropUnits never sees it, harmless
				continue
			}
			u := binary.BigEndian.Uint64(k)
			units = append(units, u)
			if u == ^uint64(0) {
				break
			}
			k, _ = c.Seek(unitPrefix(u + 1))
		}
		return nil
	})
	return units, d.wrap(err)
}
