// Package store holds the storage contracts of Granary: origins (where the
// truth lives), tiers (where cached chunks live), the stores around them
// (the write-back log's staging, the origin's health, write-back copies,
// tees, pins, the catalog: one file each) and the sentinel errors every
// implementation translates its own errors into at its boundary.
//
// store imports no other Granary package, and no package above it imports
// one under it: cmd/granary wires the implementations in.
package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// Sentinel errors. Implementations wrap or return these; callers test with
// errors.Is. Nothing outside an implementation ever sees a minio-go, os or
// HDFS error type.
var (
	ErrNoSuchBucket       = errors.New("store: no such bucket")
	ErrNoSuchKey          = errors.New("store: no such key")
	ErrBucketExists       = errors.New("store: bucket already exists")
	ErrBucketNotEmpty     = errors.New("store: bucket not empty")
	ErrInvalidBucketName  = errors.New("store: invalid bucket name")
	ErrInvalidKey         = errors.New("store: invalid object key")
	ErrPreconditionFailed = errors.New("store: object changed at the origin")
	ErrAccessDenied       = errors.New("store: access denied by the origin")
	// ErrUnavailable means the origin could not be reached or answered with a
	// server-side failure; the request may succeed later.
	ErrUnavailable = errors.New("store: origin unavailable")
	// ErrNotSupported means the origin lacks an optional ability (such as
	// keeping tags).
	ErrNotSupported = errors.New("store: not supported by this origin")
	// ErrOriginDown means the origin was not asked at all: it failed
	// repeatedly and its circuit breaker is open until a probe finds it
	// answering again (store/origin/guard). It wraps ErrUnavailable.
	ErrOriginDown = fmt.Errorf("%w: the origin is down (circuit breaker open)", ErrUnavailable)
	// ErrIncompleteBody means a Put body ended before the declared size.
	ErrIncompleteBody = errors.New("store: body shorter than its declared size")

	// ErrNotFound means a tier does not hold a chunk.
	ErrNotFound = errors.New("store: chunk not cached")
	// ErrNotLendable means a FileLender holds a chunk it cannot lend
	// unread (a Get reads it).
	ErrNotLendable = errors.New("store: chunk not lendable unread")
	// ErrTooLarge means a chunk can never fit a tier's budget.
	ErrTooLarge = errors.New("store: chunk larger than the tier")
	// ErrNotAdmitted means a full tier declined a chunk to keep the
	// chunks it holds, which have been asked for more often lately.
	ErrNotAdmitted = errors.New("store: chunk not admitted: the tier keeps more popular chunks")
	// ErrPinnedFull means a tier could not make room for a chunk:
	// everything it could evict is pinned.
	ErrPinnedFull = errors.New("store: tier full of pinned chunks")
	// ErrOverQuota means a chunk would take its bucket past its quota in
	// the tier.
	ErrOverQuota = errors.New("store: bucket at its cache quota")
)

// OriginError is an origin's refusal of a request as the client's own
// mistake, with a code no sentinel names (an S3 4xx such as MinIO's
// XMinioInvalidObjectPrefix for a prefix of "../"). The origin answered:
// it is neither unavailable nor failing, and the client is owed the
// origin's answer. Match it with errors.As.
type OriginError struct {
	Status  int    // the HTTP status, 400..499
	Code    string // the origin's error code, such as "InvalidArgument"
	Message string // the origin's message; may be empty
}

func (e *OriginError) Error() string {
	msg := fmt.Sprintf("store: the origin refused the request: %d %s", e.Status, e.Code)
	if e.Message != "" {
		msg += ": " + e.Message
	}
	return msg
}

// BucketInfo describes one bucket.
type BucketInfo struct {
	Name    string
	Created time.Time
}

// ObjectMeta is the metadata a client sets on an object and gets back.
// User holds x-amz-meta-* values keyed by lower-case name without the
// prefix; an empty value is kept. Tags are the object's tags (S3 object
// tagging) as set with the object; an origin that cannot report them with
// Stat leaves them nil and reports ObjectInfo.TagCount.
type ObjectMeta struct {
	ContentType        string
	ContentEncoding    string
	ContentDisposition string
	ContentLanguage    string
	CacheControl       string
	Expires            string // the Expires header, as the client sent it
	User               map[string]string
	Tags               map[string]string
}

// DefaultContentType is the content type of an object stored without one.
const DefaultContentType = "application/octet-stream"

// Normalized returns m as S3 stores it: DefaultContentType when none was
// given, and user metadata names in lower case.
func (m ObjectMeta) Normalized() ObjectMeta {
	if m.ContentType == "" {
		m.ContentType = DefaultContentType
	}
	if len(m.User) > 0 {
		user := make(map[string]string, len(m.User))
		for k, v := range m.User {
			user[strings.ToLower(k)] = v
		}
		m.User = user
	}
	return m
}

// ObjectInfo describes one version of an object as the origin reports it.
// ETag is the origin's ETag without quotes; with Bucket and Key it names the
// version, which is what cached chunks are keyed by.
type ObjectInfo struct {
	Bucket       string
	Key          string
	Size         int64
	ETag         string
	LastModified time.Time
	// TagCount is how many tags the object has, for an origin that does
	// not report ObjectMeta.Tags with Stat (see NumTags).
	TagCount int
	ObjectMeta
}

// NumTags is how many tags the object has (x-amz-tagging-count).
func (i ObjectInfo) NumTags() int {
	if i.Tags != nil {
		return len(i.Tags)
	}
	return i.TagCount
}

// ReadRange selects bytes of an object. Length < 0 means to the end.
// A non-empty ETag must match the object's current ETag, or the read fails
// with ErrPreconditionFailed (so chunks of one version are never mixed with
// another's).
type ReadRange struct {
	Offset int64
	Length int64
	ETag   string
}

// ListOptions selects one page of a listing. After is exclusive: the page
// holds only keys and common prefixes that sort after it. A common prefix
// equal to After (the last entry of the previous page) is not repeated, and
// neither is any key under it.
type ListOptions struct {
	Prefix    string
	Delimiter string
	After     string
	MaxKeys   int // <= 0 means 1000
}

// ListPage is one page of a listing, in S3 key order. When IsTruncated,
// NextAfter is the value to pass as After for the next page.
type ListPage struct {
	Objects        []ObjectInfo // only Key, Size, ETag, LastModified are set
	CommonPrefixes []string
	IsTruncated    bool
	NextAfter      string
}

// Origin is the slow, authoritative store a Granary node caches.
// Implementations must be safe for concurrent use.
type Origin interface {
	ListBuckets(ctx context.Context) ([]BucketInfo, error)
	// MakeBucket fails with ErrBucketExists if the bucket exists.
	MakeBucket(ctx context.Context, bucket string) error
	// RemoveBucket fails with ErrBucketNotEmpty if it holds objects.
	RemoveBucket(ctx context.Context, bucket string) error
	// StatBucket returns nil if the bucket exists, else ErrNoSuchBucket.
	StatBucket(ctx context.Context, bucket string) error
	Stat(ctx context.Context, bucket, key string) (ObjectInfo, error)
	// Get returns the bytes of r and the info of the object they belong to.
	// The caller closes the reader; the info is the whole object's.
	Get(ctx context.Context, bucket, key string, r ReadRange) (io.ReadCloser, ObjectInfo, error)
	// Put stores body as key. size < 0 means unknown. A body that ends early
	// or fails leaves no object behind (and no change to an existing one):
	// the put is all or nothing. A body of known size up to 5 GiB is stored
	// whole, not cut into parts of the origin's own, so its ETag is the
	// body's MD5 wherever the origin names objects by MD5, as S3 names a
	// client's PUT: the write-back log serves that ETag before the origin
	// has the object.
	Put(ctx context.Context, bucket, key string, body io.Reader, size int64, meta ObjectMeta) (ObjectInfo, error)
	// Delete removes key; a missing key is not an error.
	Delete(ctx context.Context, bucket, key string) error
	List(ctx context.Context, bucket string, opts ListOptions) (ListPage, error)
}

// Copier is an Origin that copies objects without moving the bytes through
// Granary. A nil meta keeps the source's metadata and tags; a non-nil one
// replaces both (meta.Tags are the copy's tags).
type Copier interface {
	Copy(ctx context.Context, srcBucket, srcKey, dstBucket, dstKey string, meta *ObjectMeta) (ObjectInfo, error)
}

// Tagger is an Origin that keeps tags with its objects and buckets (S3
// tagging). A set replaces every tag; an empty set removes them.
type Tagger interface {
	// ObjectTags fails with ErrNoSuchKey for a missing object; an object
	// without tags has an empty set.
	ObjectTags(ctx context.Context, bucket, key string) (map[string]string, error)
	SetObjectTags(ctx context.Context, bucket, key string, tags map[string]string) error
	// BucketTags returns nil, nil for a bucket without tags.
	BucketTags(ctx context.Context, bucket string) (map[string]string, error)
	SetBucketTags(ctx context.Context, bucket string, tags map[string]string) error
}

// PartLocator is an Origin that can tell where each part of an object
// completed from a multipart upload lies (GET/HEAD with partNumber).
type PartLocator interface {
	// PartRange returns the offset and length of part n of bucket/key and
	// how many parts it has. An object not made from parts is one part;
	// n past the last part is ErrInvalidPart.
	PartRange(ctx context.Context, bucket, key string, n int) (offset, length int64, parts int, err error)
}

// PartOf returns where part n of an object made from parts of the given
// sizes lies, and how many parts it has; n past the last part (or below
// 1) is ErrInvalidPart.
func PartOf(sizes []int64, n int) (offset, length int64, parts int, err error) {
	if n < 1 || n > len(sizes) {
		return 0, 0, 0, fmt.Errorf("store: %d parts, not %d: %w", len(sizes), n, ErrInvalidPart)
	}
	for _, s := range sizes[:n-1] {
		offset += s
	}
	return offset, sizes[n-1], len(sizes), nil
}

// ChunkID names one cached chunk: immutable, since the ETag is part of it.
type ChunkID struct {
	Bucket string
	Key    string
	ETag   string
	Index  int64
}

// TierStats reports a tier's usage.
type TierStats struct {
	UsedBytes     int64 `json:"usedBytes"`
	CapacityBytes int64 `json:"capacityBytes"`
	Chunks        int64 `json:"chunks"`
	Evictions     int64 `json:"evictions"` // chunks evicted since start
	Declined      int64 `json:"declined"`  // Puts declined by admission (ErrNotAdmitted) since start
	// FileBytes is what the tier holds in a memory file (the RAM tier's
	// arena), pages a process's resident set shows only where mapped.
	FileBytes int64 `json:"fileBytes,omitempty"`
}

// Tier is one cache level (RAM, disk). Chunks are immutable: Put of an ID
// that is present may be ignored. Implementations must be safe for
// concurrent use and must never return bytes other than those Put under the
// ID (a tier that cannot verify a chunk drops it and reports ErrNotFound).
type Tier interface {
	// Get returns the chunk's bytes, which the caller must not modify.
	Get(id ChunkID) ([]byte, error)
	// Put stores data under id, evicting others if needed. The tier takes
	// ownership of data; the caller must not modify it afterwards.
	Put(id ChunkID, data []byte) error
	// DeleteObject drops every chunk of every version of bucket/key.
	DeleteObject(bucket, key string) error
	Stats() TierStats
	Close() error
}

// VersionLister is a Tier that can tell which versions (ETags) of an
// object it holds chunks of, without reading them.
type VersionLister interface {
	Versions(bucket, key string) []string
}

// Admitter is a Tier with an admission policy: when it is full, Put may
// decline a chunk (ErrNotAdmitted) that has been asked for no more often
// lately than the chunks it would evict, so a scan or a random-order
// epoch over more data than the tier holds does not flush it. PutAlways
// stores the chunk regardless (data just written, or asked for by a
// warm-up); like Put, it evicts what it must.
type Admitter interface {
	PutAlways(id ChunkID, data []byte) error
}

// Holder is a Tier that can tell how many bytes of one object version it
// holds, without reading them (for status reports).
type Holder interface {
	Held(bucket, key, etag string) int64
}

// PinSet says which objects are pinned: a tier never evicts their chunks
// (a Put that needs room only pinned chunks hold fails with
// ErrPinnedFull). Pins change at any time: a tier asks whenever it picks
// a victim, and may keep the answers it got until Generation changes.
// Implementations must be safe for concurrent use and fast (a tier may
// ask under its locks).
type PinSet interface {
	Pinned(bucket, key string) bool
	// Generation changes whenever a pin is added or removed.
	Generation() uint64
}

// Quotas caps what each bucket may hold in a tier. A Put or PutAlways
// that would take a bucket's bytes in the tier past its quota fails with
// ErrOverQuota and changes nothing: the bucket's cached chunks leave by
// ordinary eviction, and only then does it get new ones. A tier counts a
// chunk's bytes (len of its data) against its bucket; quotas may change
// at any time and apply from the next Put. Implementations must be safe
// for concurrent use and fast.
type Quotas interface {
	// Quota returns the bucket's cap in bytes; 0 or less means none.
	Quota(bucket string) int64
}

// BucketSizer is a Tier that can tell how many bytes of a bucket it holds
// (chunk data, as counted against quotas).
type BucketSizer interface {
	BucketBytes(bucket string) int64
}

// ReadNoter is a Tier whose admission policy counts reads of its chunks
// that a tier in front of it served (RAM, which holds a copy of some of
// them): those reads never reach it, and without them its chunks look
// colder than they are. NoteReads counts n such reads of id; it does
// nothing if the tier does not hold id. Implementations must be safe for
// concurrent use.
type ReadNoter interface {
	NoteReads(id ChunkID, n int64)
}

// Peeker is a Tier that can return a chunk without recording an access
// (no change to its recency or frequency), for a caller looking again for
// a chunk one read has already asked it for: an admission policy must
// count each read once.
type Peeker interface {
	Peek(id ChunkID) ([]byte, error)
}

// IntoGetter is a Tier that can read a chunk into a buffer of the
// caller's (alloc returns one of n bytes), so a caller that reuses its
// buffers does not take a fresh one per read. record is Get's (true) or
// Peek's (false) way of counting the read. The bytes are the caller's.
type IntoGetter interface {
	GetInto(id ChunkID, record bool, alloc func(n int64) []byte) ([]byte, error)
}

// PutCopier is a Tier whose Put keeps a copy of some chunks, never the
// caller's slice: after a Put of n bytes for which PutCopies(n), the
// caller may reuse its buffer.
type PutCopier interface {
	PutCopies(n int) bool
}

// Lease keeps bytes a tier lent in place (Lender) until Release, which
// its holder calls once, when done with them.
type Lease interface {
	Release()
}

// Lender is a Tier that can lend a chunk's bytes where they lie, with no
// copy: they stay valid until the lease is released. record is Get's
// (true) or Peek's (false) way of counting the read. A nil lease means
// the bytes need none (they are the garbage collector's to keep).
type Lender interface {
	Lend(id ChunkID, record bool) ([]byte, Lease, error)
}

// FileSpan is a Lease on bytes that also lie in a file, at off: while the
// lease is held, the kernel may send them from there (sendfile) instead
// of from memory.
type FileSpan interface {
	Lease
	File() (fd uintptr, off int64)
}

// FileLender is a Tier that can lend where a chunk lies in a file without
// reading it: the kernel sends it from there (sendfile), and ReadAt reads
// it, while the lease is held. The chunk's bytes are not checked as a Get
// checks them: a tier lends only chunks it can vouch for without reading
// them, and fails with ErrNotLendable for the others (a Get serves them).
// n is the chunk's length; record is Get's or Peek's way of counting.
type FileLender interface {
	LendFile(id ChunkID, record bool) (span FileChunk, n int64, err error)
}

// FileChunk is a FileLender's lease on a chunk in a file.
type FileChunk interface {
	FileSpan
	io.ReaderAt // reads within the chunk: off 0 is its first byte
}

// AdmitChecker is an Admitter that can say whether a Put of n bytes
// under id would pass its admission now, changing nothing.
type AdmitChecker interface {
	WouldAdmit(id ChunkID, n int) bool
}
