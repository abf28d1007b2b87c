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
package parts

import (
	"context"
	"io"

	"github.com/granary-dev/granary/store"
)

// Options configure a Store.
type Options struct {
	// Dir holds the uploads; it is created if missing.
	Dir string
	// NoSync skips fsync (tests, and callers that promise no durability).
	NoSync bool
}

// Store is a set of multipart uploads under one directory. It is safe for
// concurrent use.
type Store struct{}

// Open opens (or creates) the store in opts.Dir. Uploads left by an
// earlier process are kept (a client may go on with them); temp files of
// parts that were being written are removed.
func Open(opts Options) (*Store, error) { panic("parts: not implemented") }

// Create starts an upload of bucket/key with meta and returns its ID
// (random, URL-safe).
func (s *Store) Create(bucket, key string, meta store.ObjectMeta) (string, error) {
	panic("parts: not implemented")
}

// PutPart stores part number of the upload from exactly size bytes of
// body (ErrIncompleteBody if it ends early), as store.Multipart.PutPart.
func (s *Store) PutPart(ctx context.Context, bucket, key, id string, number int, body io.Reader, size int64) (store.PartInfo, error) {
	panic("parts: not implemented")
}

// Assemble validates a completion of the upload (store.CheckCompletion,
// then every listed part present with that ETag, every part but the last
// at least store.MinPartSize) and returns the joined parts. The upload
// stays open, and is locked against PutPart, Abort and another Assemble
// until the Assembly is closed, removed or sealed.
func (s *Store) Assemble(bucket, key, id string, parts []store.CompletePart) (*Assembly, error) {
	panic("parts: not implemented")
}

// Abort ends the upload and removes its parts.
func (s *Store) Abort(bucket, key, id string) error { panic("parts: not implemented") }

// ListParts lists the upload's parts as store.Multipart.ListParts.
func (s *Store) ListParts(bucket, key, id string, opts store.PartListOptions) (store.PartPage, error) {
	panic("parts: not implemented")
}

// ListUploads lists the bucket's open uploads as
// store.Multipart.ListUploads. Sealed uploads are not listed.
func (s *Store) ListUploads(bucket string, opts store.UploadListOptions) (store.UploadPage, error) {
	panic("parts: not implemented")
}

// Sealed returns the IDs of sealed uploads (found by Open or sealed
// since), for an owner to match against its own records and Remove those
// it no longer needs.
func (s *Store) Sealed() []string { panic("parts: not implemented") }

// OpenSealed returns the Assembly of a sealed upload (after a restart).
func (s *Store) OpenSealed(id string) (*Assembly, error) { panic("parts: not implemented") }

// Remove deletes an upload (open or sealed) and its files.
func (s *Store) Remove(id string) error { panic("parts: not implemented") }

// Close releases the store.
func (s *Store) Close() error { panic("parts: not implemented") }

// Assembly is a validated completion: the listed parts, in order.
type Assembly struct {
	Bucket, Key, UploadID string
	Meta                  store.ObjectMeta
	Parts                 []store.PartInfo // the listed parts, in order
	Size                  int64            // sum of the parts' sizes
	ETag                  string           // store.MultipartETag of the parts
}

// Open returns a reader of n bytes of the joined parts from offset off
// (n < 0: to the end), reading the part files as it goes.
func (a *Assembly) Open(off, n int64) (io.ReadCloser, error) { panic("parts: not implemented") }

// Seal makes the upload a completed one: no longer listed, no longer open
// to PutPart, Abort or Assemble (ErrNoSuchUpload), its files kept until
// Remove. It is durable when it returns (unless NoSync).
func (a *Assembly) Seal() error { panic("parts: not implemented") }

// Remove deletes the upload and its files (the completion is done).
func (a *Assembly) Remove() error { panic("parts: not implemented") }

// Close unlocks the upload, leaving it open (the completion failed).
func (a *Assembly) Close() error { panic("parts: not implemented") }
