// Package boltdb opens the bbolt files of the node's indexes (the chunk
// index of the disk tier, the object catalog) the one way they are opened:
// without fsync (they are rebuilt or revalidated after a crash), with a
// lock timeout, and with bbolt's errors sorted into the caller's own.
package boltdb

import (
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/granary-dev/granary/store"
)

// LockTimeout bounds the wait for another process's lock on the file.
const LockTimeout = 2 * time.Second

// Errors are the caller's sentinels for what opening can go wrong with.
type Errors struct {
	Locked  error // another process holds the file
	Corrupt error // not a readable database
	IO      error // anything else
}

// Open opens or creates the database at path.
func Open(path string, errs Errors) (*bolt.DB, error) {
	db, err := bolt.Open(path, store.PrivateFileMode, &bolt.Options{
		Timeout:      LockTimeout,
		NoSync:       true,
		NoGrowSync:   true,
		FreelistType: bolt.FreelistMapType,
		NoStatistics: true,
	})
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return nil, fmt.Errorf("%w: %s", errs.Locked, path)
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrChecksum),
		errors.Is(err, berrors.ErrVersionMismatch), errors.Is(err, berrors.ErrInvalidMapping):
		return nil, fmt.Errorf("%w: %s: %v", errs.Corrupt, path, err)
	case err != nil:
		return nil, fmt.Errorf("%w: open %s: %v", errs.IO, path, err)
	}
	return db, nil
}
