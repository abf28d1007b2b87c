// Tees: the contract of a local store of upload parts that a node copies a
// write-through upload into while it streams to the origin, so the
// completed object fills the cache from local disk rather than a download
// (store/parts implements it).
package store

import (
	"context"
	"io"
)

// PartTee keeps uploads' parts on this node's disk. Its contents are a
// cache's: nothing in it needs to survive a restart. Upload IDs are its
// own, valid for the bucket and key they were created for only.
// Implementations must be safe for concurrent use.
type PartTee interface {
	// Create starts an upload of bucket/key and returns its ID.
	Create(bucket, key string, meta ObjectMeta) (string, error)
	// PutPartNamed keeps exactly size bytes of body as part number of
	// upload id (a body that fails or ends early keeps nothing), named
	// once kept by the ETag name gives (ok false: drop it), not hashed.
	PutPartNamed(ctx context.Context, bucket, key, id string, number int, body io.Reader, size int64, name func() (etag string, ok bool)) error
	ListParts(bucket, key, id string, opts PartListOptions) (PartPage, error)
	// ListUploads lists bucket's uploads not yet assembled.
	ListUploads(bucket string, opts UploadListOptions) (UploadPage, error)
	// Assemble checks a completion (as Multipart.CompleteUpload would)
	// against the upload's parts and returns them joined; the upload is
	// locked until the Assembled is removed.
	Assemble(bucket, key, id string, parts []CompletePart) (Assembled, error)
	// AssembleWhole returns part 1 as the whole object (its ETag empty:
	// a single PUT's tee, checked by its size), locked as Assemble's are.
	AssembleWhole(bucket, key, id string) (Assembled, error)
	// Remove drops upload id and its files.
	Remove(id string) error
	Close() error
}

// Assembled is a completed upload of a PartTee: its parts joined, read in
// place.
type Assembled interface {
	// Size is the sum of the parts' sizes; ETag is MultipartETag of them.
	Size() int64
	ETag() string
	// Open reads n bytes from offset off (n < 0, or past the end: to the
	// end); it fails once the upload is removed. Its readers are also
	// FileSections.
	Open(off, n int64) (io.ReadCloser, error)
	// Remove drops the upload and its files.
	Remove() error
}

// FileSections is a reader whose bytes lie in files on this node, so that
// they can be sent by reference (sendfile) rather than read. NextSection
// moves the reader past its next bytes, at most max of them and all in
// one file, and returns where they lie: the file's descriptor, their
// offset in it and how many there are (io.EOF: none are left). The
// descriptor stays open until the next call to Read, NextSection or
// Close.
type FileSections interface {
	NextSection(max int64) (fd uintptr, off, n int64, err error)
}
