// Package catalog is a node's persistent index of object metadata: what a
// listing shows (key, size, ETag, last-modified), loaded from complete
// origin listings by metadata warm-ups and kept current by writes through
// the node, so that LIST under a loaded ("covered") prefix is answered
// without the origin, and warm-ups can tell what changed since the last one.
//
// Storage: one bbolt file. Each S3 bucket is a bbolt bucket keyed by object
// key (so a cursor walks keys in S3 order: byte order); coverage records
// (bucket, prefix) -> load time in a bbolt bucket of their own.
//
// Consistency rules:
//   - A prefix is covered only after a Load of it completed; while a Load
//     runs, the prefix it loads is not covered (LIST goes to the origin),
//     unless an enclosing prefix is covered by an earlier Load.
//   - A Put or Delete made while a Load of an enclosing prefix runs wins
//     over what that Load's listing says about the same key (the write is
//     newer than the listing).
//   - Put and Delete of keys outside every covered prefix and every
//     running Load are ignored (nothing would read them).
//
// Durability: the catalog is a cache of the origin's listings, so its
// transactions are not fsynced (bbolt NoSync): losing the last writes
// would only cost a warm-up. What must never happen is serving a torn
// file: with NoSync, a power loss can leave a meta page that points at
// pages that never reached the disk, which bbolt cannot detect. So Open
// records, with an fsynced transaction, "open since boot B" (B the
// kernel's boot ID) and Close records "clean" the same way after the
// last write. An Open that finds "open since boot B" while the machine
// now runs another boot (or the boot ID is unknown) knows the file may
// be torn and fails with ErrCorrupt; the same boot means only the process
// died, and the OS page cache still holds every write in order. A file
// bbolt itself cannot read also fails with ErrCorrupt. Neither is ever
// replaced: the caller decides (normally: remove the file and re-warm).
package catalog

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/internal/boltdb"
)

// Errors of the catalog. Nothing above this package sees a bbolt error.
var (
	ErrClosed  = errors.New("catalog: closed")
	ErrLocked  = errors.New("catalog: database locked by another process")
	ErrCorrupt = errors.New("catalog: database file corrupt or possibly torn")
	ErrIO      = errors.New("catalog: storage error")
	// ErrAborted fails a Load whose bucket was dropped while it ran.
	ErrAborted = errors.New("catalog: load aborted: bucket dropped")
)

// Options configure a catalog.
type Options struct {
	// Path is the bbolt file; its directory must exist.
	Path   string
	Logger zerolog.Logger
}

// The catalog's value types are the contract's (store.Catalog).
type (
	// Entry is what the catalog keeps of one object.
	Entry = store.CatalogEntry
	// ChangeKind says how a loaded entry compares with what the
	// catalog held.
	ChangeKind = store.ChangeKind
	// Change is one key of a Load.
	Change = store.CatalogChange
	// Coverage is one covered prefix.
	Coverage = store.CatalogCoverage
)

// The kinds of change a Load reports.
const (
	Added     = store.EntryAdded
	Changed   = store.EntryChanged
	Unchanged = store.EntryUnchanged
	Removed   = store.EntryRemoved
)

var _ store.Catalog = (*DB)(nil)

// Top-level bbolt buckets.
var (
	bucketObjects  = []byte("objects")  // S3 bucket name -> nested bucket: key -> entry
	bucketCoverage = []byte("coverage") // coverKey(bucket, prefix) -> load time
	bucketMeta     = []byte("meta")
	keyState       = []byte("state") // stateClean or stateOpen + boot ID
)

const (
	stateClean = "clean"
	stateOpen  = "open:"
)

// bootID returns the kernel's boot ID, or "" if unknown. A variable so
// tests can simulate a reboot.
var bootID = func() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// DB is an open catalog, safe for concurrent use.
//
// Lock order: closeMu before mu; bbolt's own writer lock is taken with
// closeMu held shared but never with mu held (mu is held only for short
// in-memory updates, possibly inside a bbolt transaction).
type DB struct {
	db  *bolt.DB
	log zerolog.Logger

	// closeMu guards closed. Every transaction runs with it held shared,
	// Close takes it exclusively, so the "clean" marker is the last write.
	closeMu sync.RWMutex
	closed  bool

	// mu guards cover (the in-memory mirror of bucketCoverage, updated in
	// the transaction that changes it) and runs (the running Loads).
	mu    sync.RWMutex
	cover map[string]map[string]time.Time // bucket -> prefix -> at
	runs  map[*loadRun]struct{}
}

// Open opens or creates the catalog at opts.Path. A file that cannot be
// read as a catalog is reported (and left alone), not silently replaced.
func Open(opts Options) (*DB, error) {
	path := opts.Path
	bdb, err := boltdb.Open(path, boltdb.Errors{Locked: ErrLocked, Corrupt: ErrCorrupt, IO: ErrIO})
	if err != nil {
		return nil, err
	}
	d := &DB{db: bdb, log: opts.Logger, cover: map[string]map[string]time.Time{}, runs: map[*loadRun]struct{}{}}
	if err := d.init(path); err != nil {
		_ = bdb.Close()
		return nil, err
	}
	return d, nil
}

// init checks the shutdown marker, marks the file open (fsynced) and
// loads the coverage records. A file that may be torn is not written.
func (d *DB) init(path string) error {
	boot := bootID()
	err := d.db.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta == nil {
			return nil // a new file
		}
		st := string(meta.Get(keyState))
		if st != stateClean && (boot == "" || st != stateOpen+boot) {
			return fmt.Errorf("%w: %s was not closed before the machine restarted (state %q)", ErrCorrupt, path, st)
		}
		return nil
	})
	if err != nil {
		return err
	}
	d.db.NoSync = false // the "open" marker must be on disk before any unsynced write
	err = d.db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketObjects, bucketCoverage, bucketMeta} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		if err := d.readCoverage(tx); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put(keyState, []byte(stateOpen+boot))
	})
	d.db.NoSync = true
	if err != nil {
		return fmt.Errorf("%w: init %s: %v", ErrCorrupt, path, err)
	}
	return nil
}

// Close closes the file; Loads in progress fail.
func (d *DB) Close() error {
	d.closeMu.Lock()
	defer d.closeMu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	// A synced commit flushes the file, earlier unsynced writes included,
	// before the meta page that says "clean".
	d.db.NoSync = false
	err := d.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put(keyState, []byte(stateClean))
	})
	if cerr := d.db.Close(); err == nil {
		err = cerr
	}
	return d.wrap(err)
}

// view runs fn in a read transaction unless the catalog is closed.
func (d *DB) view(fn func(tx *bolt.Tx) error) error {
	d.closeMu.RLock()
	defer d.closeMu.RUnlock()
	if d.closed {
		return ErrClosed
	}
	return d.wrap(d.db.View(fn))
}

// update runs fn in a write transaction unless the catalog is closed.
func (d *DB) update(fn func(tx *bolt.Tx) error) error {
	d.closeMu.RLock()
	defer d.closeMu.RUnlock()
	if d.closed {
		return ErrClosed
	}
	return d.wrap(d.db.Update(fn))
}

// wrap translates a bbolt error into this package's vocabulary; errors
// that are already ours or the store's pass through.
func (d *DB) wrap(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, berrors.ErrDatabaseNotOpen), errors.Is(err, berrors.ErrTxClosed):
		return ErrClosed
	case errors.Is(err, ErrClosed), errors.Is(err, ErrCorrupt), errors.Is(err, ErrAborted),
		errors.Is(err, store.ErrInvalidKey), errors.Is(err, errLoad):
		return err
	default:
		return fmt.Errorf("%w: %v", ErrIO, err)
	}
}
