// Package parts keeps multipart uploads on a local filesystem, for layers
// that have no multipart upload of their own (the directory origin, the
// write-back log): each upload is a directory holding its description and
// its parts; each part is written to a temp file, fsynced unless NoSync,
// and renamed into place, so a crash leaves whole parts or none.
//
// The Store does the bookkeeping of store.Multipart (IDs, part numbers and
// ETags, the completion rules, listings); what a completion does with the
// joined parts is the caller's: Assemble validates and hands them over,
// and the caller then Removes the upload (the object is safe elsewhere) or
// Seals it (the part files become the object's own storage).
//
// On-disk layout under Dir (see disk.go for how Open enforces it):
//
//	<id>/upload.json        description: bucket, key, meta, initiated
//	<id>/part-<n>-<gen>     data of part n; gen is random, new on each put
//	<id>/part-<n>.json      info of part n: its data file, ETag, size, mtime
//	<id>/sealed.json        present once sealed: the completed parts
//	<id>/tmp-<rand>         a part or info being written
//	.new-<id>/              an upload being created (renamed to <id>)
//	.trash-<id>/            an upload being removed
//
// Invariants: a directory <id> always holds a complete upload.json (it is
// written inside .new-<id>, which is renamed only when it is durable). A
// part exists exactly when its info file exists and names a data file of
// the recorded size: the info rename is a part's commit point, made only
// after its data file is durably in place, and an old data file of the
// same number is deleted only after the new info is durable. Data files no
// info (or, once sealed, no sealed.json entry) names are leftovers of a
// crash and Open removes them, as it removes temp files, .new- and .trash-
// directories.
package parts

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/granary-dev/granary/store"
)

// Options configure a Store.
type Options struct {
	// Dir holds the uploads; it is created if missing.
	Dir string
	// NoSync skips fsync (tests, and callers that promise no durability).
	NoSync bool
}

// errClosed is returned by a Store after Close.
var errClosed = errors.New("parts: store closed")

// Store is a set of multipart uploads under one directory. It is safe for
// concurrent use.
//
// Locking: every upload has a lock (upload.lock) held by whatever changes
// its files (a part's commit, Abort, Remove, Seal) and by an Assembly from
// Assemble until it is closed, removed or sealed. Store.mu guards the
// in-memory index and every upload's mutable fields; it is held briefly and
// never while waiting for an upload lock. Lock order: upload lock, then mu.
// No operation holds two upload locks.
type Store struct {
	dir    string
	noSync bool

	mu       sync.Mutex
	uploads  map[string]*upload // by ID, open and sealed; guarded by mu
	lastNano int64              // initiation time of the newest ID; guarded by mu
	closed   bool               // guarded by mu
}

// upload is the in-memory state of one upload directory.
type upload struct {
	id, bucket, key string
	meta            store.ObjectMeta
	initiated       time.Time
	// lock is a one-slot semaphore (a channel, so a PutPart waiting for it
	// can give up when its context ends).
	lock chan struct{}

	// Guarded by Store.mu.
	parts   map[int]partRec // committed parts of an open upload
	sealed  *sealRec        // set once sealed
	removed bool            // aborted or removed: the ID is dead
}

// open reports whether u still takes parts and completions (mu held).
func (u *upload) open() bool { return !u.removed && u.sealed == nil }

// acquire takes u's lock, waiting for it until ctx ends.
func (u *upload) acquire(ctx context.Context) error {
	select {
	case u.lock <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (u *upload) release() { <-u.lock }

// Open opens (or creates) the store in opts.Dir. Uploads left by an
// earlier process are kept (a client may go on with them); temp files of
// parts that were being written are removed.
func Open(opts Options) (*Store, error) {
	if opts.Dir == "" {
		return nil, errors.New("parts: Options.Dir is required")
	}
	if err := os.MkdirAll(opts.Dir, dirPerm); err != nil {
		return nil, fmt.Errorf("parts: create %s: %w", opts.Dir, err)
	}
	s := &Store{dir: opts.Dir, noSync: opts.NoSync, uploads: make(map[string]*upload)}
	if err := s.load(); err != nil {
		return nil, err
	}
	return s, nil
}

// Create starts an upload of bucket/key with meta and returns its ID
// (random, URL-safe).
func (s *Store) Create(bucket, key string, meta store.ObjectMeta) (string, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return "", errClosed
	}
	nano := max(time.Now().UnixNano(), s.lastNano+1)
	s.lastNano = nano
	s.mu.Unlock()
	id, err := newID(nano)
	if err != nil {
		return "", err
	}
	u := &upload{
		id: id, bucket: bucket, key: key, meta: meta,
		initiated: time.Unix(0, nano).UTC(),
		lock:      make(chan struct{}, 1), parts: make(map[int]partRec),
	}
	if err := s.writeNew(u); err != nil {
		return "", err
	}
	s.mu.Lock()
	s.uploads[id] = u
	s.mu.Unlock()
	return id, nil
}

// newID returns an upload ID: the initiation time as 16 hex digits, then
// 16 random bytes in hex. IDs are fixed-width, so for one store (whose
// initiation times strictly increase) ID order is initiation order.
func newID(nano int64) (string, error) {
	var rnd [16]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return "", fmt.Errorf("parts: upload ID: %w", err)
	}
	return fmt.Sprintf("%016x%s", uint64(nano), hex.EncodeToString(rnd[:])), nil
}

// idNano returns the initiation time encoded in id, if it is one.
func idNano(id string) (int64, bool) {
	if len(id) != 48 {
		return 0, false
	}
	n, err := strconv.ParseUint(id[:16], 16, 63)
	if err != nil {
		return 0, false
	}
	if _, err := hex.DecodeString(id[16:]); err != nil {
		return 0, false
	}
	return int64(n), true
}

// lookupOpen returns the open upload id of bucket/key, or ErrNoSuchUpload.
func (s *Store) lookupOpen(bucket, key, id string) (*upload, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errClosed
	}
	u := s.uploads[id]
	if u == nil || u.bucket != bucket || u.key != key || !u.open() {
		return nil, noSuchUpload(id)
	}
	return u, nil
}

// lockOpen looks up the open upload and takes its lock, then checks again
// that it is still open (it may have been sealed or removed meanwhile).
func (s *Store) lockOpen(ctx context.Context, bucket, key, id string) (*upload, error) {
	u, err := s.lookupOpen(bucket, key, id)
	if err != nil {
		return nil, err
	}
	if err := u.acquire(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	ok := u.open()
	s.mu.Unlock()
	if !ok {
		u.release()
		return nil, noSuchUpload(id)
	}
	return u, nil
}

func noSuchUpload(id string) error {
	return fmt.Errorf("%w: %q", store.ErrNoSuchUpload, id)
}

// Abort ends the upload and removes its parts.
func (s *Store) Abort(bucket, key, id string) error {
	u, err := s.lockOpen(context.Background(), bucket, key, id)
	if err != nil {
		return err
	}
	defer u.release()
	return s.removeLocked(u)
}

// AbortBucket aborts every upload of bucket (one that was just removed).
// Uploads completed or aborted meanwhile are skipped.
func (s *Store) AbortBucket(bucket string) error {
	for {
		page, err := s.ListUploads(bucket, store.UploadListOptions{})
		if err != nil {
			return err
		}
		for _, u := range page.Uploads {
			if err := s.Abort(bucket, u.Key, u.UploadID); err != nil && !errors.Is(err, store.ErrNoSuchUpload) {
				return fmt.Errorf("parts: abort upload %s of removed bucket %s: %w", u.UploadID, bucket, err)
			}
		}
		if !page.IsTruncated {
			return nil
		}
	}
}

// Sealed returns the IDs of sealed uploads (found by Open or sealed
// since), for an owner to match against its own records and Remove those
// it no longer needs.
func (s *Store) Sealed() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for id, u := range s.uploads {
		if u.sealed != nil && !u.removed {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// Unsealed returns the IDs of the open uploads of every bucket, for an
// owner that uses uploads as staging and drops those a crash cut short.
func (s *Store) Unsealed() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for id, u := range s.uploads {
		if u.sealed == nil && !u.removed {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// OpenSealed returns the Assembly of a sealed upload (after a restart).
func (s *Store) OpenSealed(id string) (*Assembly, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.uploads[id]
	if u == nil || u.removed || u.sealed == nil {
		return nil, noSuchUpload(id)
	}
	return s.newAssembly(u, u.sealed.Parts, u.sealed.ETag, stateSealed), nil
}

// Remove deletes an upload (open or sealed) and its files. It waits while
// an Assembly of the upload is open.
func (s *Store) Remove(id string) error {
	s.mu.Lock()
	u := s.uploads[id]
	s.mu.Unlock()
	if u == nil {
		return noSuchUpload(id)
	}
	if err := u.acquire(context.Background()); err != nil {
		return err
	}
	defer u.release()
	s.mu.Lock()
	removed := u.removed
	s.mu.Unlock()
	if removed {
		return noSuchUpload(id)
	}
	return s.removeLocked(u)
}

// removeLocked deletes u (its lock held): the directory is renamed to a
// trash name first, which is the atomic, durable step; deleting the trash
// may fail or be cut by a crash, and Open finishes it.
func (s *Store) removeLocked(u *upload) error {
	trash := trashPrefix + u.id
	if err := os.Rename(s.path(u.id), s.path(trash)); err != nil {
		return fmt.Errorf("parts: remove upload %s: %w", u.id, err)
	}
	s.mu.Lock()
	u.removed = true
	delete(s.uploads, u.id)
	s.mu.Unlock()
	err := s.syncDir(s.dir)
	os.RemoveAll(s.path(trash))
	return err
}

// Close releases the store: later Create, PutPart, Assemble, Abort and
// listings fail. Assemblies already returned may still be read, closed,
// sealed or removed.
func (s *Store) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return nil
}

// partNumberOK checks a part number against S3's range.
func partNumberOK(n int) error {
	if n < 1 || n > store.MaxPartNumber {
		return fmt.Errorf("%w: %d", store.ErrInvalidPartNumber, n)
	}
	return nil
}

// trimETag returns a client's ETag without quotes, in lower case.
func trimETag(etag string) string {
	return strings.ToLower(strings.Trim(etag, `"`))
}
