// Package writeback puts a durable write-back log in front of an origin:
// writes to write-back buckets are made durable on local disk (fsync) and
// recorded in a bbolt journal, then acknowledged; a background uploader
// sends them to the origin in order per key, with retries and backoff, and
// resumes after a crash or restart. Until an object reaches the origin the
// Log answers reads of it (Stat, Get, List) from its local copy, so every
// client sees a write at once.
//
// Writes to other buckets pass straight through to the origin, after any
// pending write-back of the same key (so an older write never overtakes a
// newer one).
package writeback

import (
	"context"
	"io"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/granary-dev/granary/store"
)

// Options configure a Log.
type Options struct {
	// Origin is where objects end up. It must implement store.Multipart.
	Origin store.Origin
	// Dir holds the journal and the staged objects; created if missing.
	Dir string
	// WriteBack reports whether a bucket is in write-back mode; nil means
	// none is (everything passes through, pending entries still upload).
	WriteBack func(bucket string) bool
	// DirtyLimit bounds the bytes staged and not yet at the origin
	// (including parts of open uploads); a write past it fails with
	// store.ErrSlowDown. 0 means 8 GiB.
	DirtyLimit int64
	// Workers is how many objects upload at once; 0 means 4.
	Workers int
	// RetryMin and RetryMax bound the backoff between attempts of an
	// upload that failed; 0 means 1s and 1m.
	RetryMin, RetryMax time.Duration
	// OnPersisted, if set, is called after an object reached the origin,
	// with the info the Log served for it and the origin's ETag (they
	// differ only if the origin names the version otherwise).
	OnPersisted func(staged store.ObjectInfo, originETag string)
	Registerer  prometheus.Registerer
	Logger      zerolog.Logger
}

// Log is the write-back layer. It implements store.Origin,
// store.Multipart and store.Copier, and is safe for concurrent use.
type Log struct{}

var (
	_ store.Origin    = (*Log)(nil)
	_ store.Multipart = (*Log)(nil)
	_ store.Copier    = (*Log)(nil)
)

// Open opens the log in opts.Dir, replays its journal (entries not yet at
// the origin are queued again) and starts the uploader.
func Open(opts Options) (*Log, error) { panic("writeback: not implemented") }

// Persisted reports whether bucket/key has no write waiting for the
// origin (true for keys the log never saw).
func (l *Log) Persisted(bucket, key string) bool { panic("writeback: not implemented") }

// FlushStatus is a flush's progress: what is still waiting under its
// prefix, and the last upload error seen there (empty if none).
type FlushStatus struct {
	Pending      int
	PendingBytes int64
	Uploaded     int
	LastError    string
}

// Flush waits until every write under bucket/prefix accepted before the
// call is at the origin, calling progress (if set) at least every second.
// It fails when ctx ends, or when an upload under the prefix failed in a
// way retries cannot fix (the entry stays journaled).
func (l *Log) Flush(ctx context.Context, bucket, prefix string, progress func(FlushStatus)) error {
	panic("writeback: not implemented")
}

// Stats is the log's state.
type Stats struct {
	DirtyBytes   int64
	DirtyObjects int
}

// Stats returns the log's state.
func (l *Log) Stats() Stats { panic("writeback: not implemented") }

// Close stops the uploader (waiting for uploads in progress to stop) and
// closes the journal. Pending entries stay journaled for the next Open.
func (l *Log) Close() error { panic("writeback: not implemented") }

// The store.Origin, store.Multipart and store.Copier methods.

func (l *Log) ListBuckets(ctx context.Context) ([]store.BucketInfo, error) {
	panic("writeback: not implemented")
}
func (l *Log) MakeBucket(ctx context.Context, bucket string) error {
	panic("writeback: not implemented")
}
func (l *Log) RemoveBucket(ctx context.Context, bucket string) error {
	panic("writeback: not implemented")
}
func (l *Log) StatBucket(ctx context.Context, bucket string) error {
	panic("writeback: not implemented")
}
func (l *Log) Stat(ctx context.Context, bucket, key string) (store.ObjectInfo, error) {
	panic("writeback: not implemented")
}
func (l *Log) Get(ctx context.Context, bucket, key string, r store.ReadRange) (io.ReadCloser, store.ObjectInfo, error) {
	panic("writeback: not implemented")
}
func (l *Log) Put(ctx context.Context, bucket, key string, body io.Reader, size int64, meta store.ObjectMeta) (store.ObjectInfo, error) {
	panic("writeback: not implemented")
}
func (l *Log) Delete(ctx context.Context, bucket, key string) error {
	panic("writeback: not implemented")
}
func (l *Log) List(ctx context.Context, bucket string, opts store.ListOptions) (store.ListPage, error) {
	panic("writeback: not implemented")
}
func (l *Log) Copy(ctx context.Context, srcBucket, srcKey, dstBucket, dstKey string, meta *store.ObjectMeta) (store.ObjectInfo, error) {
	panic("writeback: not implemented")
}
func (l *Log) NewUpload(ctx context.Context, bucket, key string, meta store.ObjectMeta) (string, error) {
	panic("writeback: not implemented")
}
func (l *Log) PutPart(ctx context.Context, bucket, key, uploadID string, number int, body io.Reader, size int64) (store.PartInfo, error) {
	panic("writeback: not implemented")
}
func (l *Log) CompleteUpload(ctx context.Context, bucket, key, uploadID string, parts []store.CompletePart) (store.ObjectInfo, error) {
	panic("writeback: not implemented")
}
func (l *Log) AbortUpload(ctx context.Context, bucket, key, uploadID string) error {
	panic("writeback: not implemented")
}
func (l *Log) ListParts(ctx context.Context, bucket, key, uploadID string, opts store.PartListOptions) (store.PartPage, error) {
	panic("writeback: not implemented")
}
func (l *Log) ListUploads(ctx context.Context, bucket string, opts store.UploadListOptions) (store.UploadPage, error) {
	panic("writeback: not implemented")
}
