// The catalog: the contract of a node's index of object metadata, loaded
// from complete origin listings by metadata warm-ups and kept current by
// writes through the node (store/catalog implements it), as the engine's
// LIST and the warm-ups and status reports see it.
package store

import "time"

// CatalogEntry is what a catalog keeps of one object: what a listing
// shows.
type CatalogEntry struct {
	Key          string
	Size         int64
	ETag         string
	LastModified time.Time
}

// ChangeKind says how a loaded entry compares with what the catalog held.
type ChangeKind int

const (
	EntryAdded     ChangeKind = iota // not in the catalog before
	EntryChanged                     // in the catalog with another ETag or size
	EntryUnchanged                   // in the catalog with the same ETag and size
	EntryRemoved                     // in the catalog, not in the listing
)

// CatalogChange is one key of a Load: Entry is the listing's (zero for
// EntryRemoved), Old the catalog's before the Load (zero for EntryAdded).
type CatalogChange struct {
	Kind  ChangeKind
	Entry CatalogEntry
	Old   CatalogEntry
}

// CatalogCoverage is one covered prefix: a Load of it completed at At
// (when its listing of the origin began).
type CatalogCoverage struct {
	Bucket, Prefix string
	At             time.Time
}

// Catalog is a node's index of listings. A prefix is covered only once a
// Load of it completed, and LIST under a covered prefix may be answered
// from the catalog. A Put or Delete made while a Load of an enclosing
// prefix runs wins over that Load's listing of the key; writes of keys
// outside every covered prefix and running Load are ignored. It is a
// cache of the origin: losing it costs a warm-up. Implementations must
// be safe for concurrent use.
type Catalog interface {
	// Covered reports whether bucket/prefix lies within a covered prefix,
	// and when the Load that covered it (the longest enclosing one)
	// listed the origin.
	Covered(bucket, prefix string) (at time.Time, ok bool)
	// Coverage lists the covered prefixes of bucket (every bucket's for
	// ""), sorted by bucket and prefix.
	Coverage(bucket string) ([]CatalogCoverage, error)
	// List answers one page as Origin.List would, from what the catalog
	// holds; the caller checks Covered first.
	List(bucket string, opts ListOptions) (ListPage, error)
	// Get returns the entry of bucket/key, and whether there is one.
	Get(bucket, key string) (CatalogEntry, bool, error)
	// Put and Delete record a write through the node.
	Put(bucket string, e CatalogEntry) error
	Delete(bucket, key string) error
	// DropBucket forgets the bucket's entries and coverage; its running
	// Loads fail.
	DropBucket(bucket string) error
	// Load replaces what the catalog holds under bucket/prefix with a
	// complete origin listing: next yields every object under prefix in
	// key order, then ok=false; an error (of next or each) aborts it and
	// leaves the prefix uncovered. each (may be nil) hears of every key
	// listed or dropped, in key order. Once done, bucket/prefix is
	// covered as of at, when the listing started. Loads of overlapping
	// prefixes of one bucket run one after the other.
	Load(bucket, prefix string, at time.Time, next func() (CatalogEntry, bool, error), each func(CatalogChange) error) error
}
