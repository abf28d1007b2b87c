// Options of the caching engine and their defaults.
package gateway

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/granary-dev/granary/store"
)

// FreshMode says how long cached metadata (HEAD, LIST) may be trusted.
// Chunk data never goes stale: it is keyed by the origin's ETag.
type FreshMode string

const (
	// Immutable metadata is never revalidated (datasets that never change).
	Immutable FreshMode = "immutable"
	// TTL metadata is revalidated with the origin after Freshness.TTL.
	TTL FreshMode = "ttl"
	// Always revalidates on every request.
	Always FreshMode = "always"
)

// Freshness is a bucket's metadata rule. The zero value is TTL with a
// one-minute TTL, serving stale metadata when the origin cannot answer.
//
// Metadata (an object's, or a listing page) past its TTL is served at
// once and revalidated in the background (stale-while-revalidate); with
// Always, a request waits for the origin at most Options.OriginTimeout,
// then gets the stale copy of an object's metadata (listing pages are
// not kept).
// NoStale never serves metadata past its rule: TTL and Always requests
// wait (at most OriginTimeout) and fail with store.ErrUnavailable when the
// origin does not answer.
type Freshness struct {
	Mode    FreshMode
	TTL     time.Duration
	NoStale bool
}

func (f Freshness) normalize() (Freshness, error) {
	switch f.Mode {
	case "":
		f.Mode = TTL
	case Immutable, TTL, Always:
	default:
		return f, fmt.Errorf("gateway: unknown freshness mode %q", f.Mode)
	}
	if f.Mode == TTL && f.TTL <= 0 {
		f.TTL = time.Minute
	}
	return f, nil
}

// Options configure an Engine. Only Origin is required.
type Options struct {
	Origin store.Origin
	// Staging, if set, is the write-back log (normally Origin itself,
	// which writes go through): the engine reads staged copies in place
	// for write-back buckets, Flush waits for it and Persisted asks it.
	// Nil means every acknowledged write is at the origin already.
	Staging store.Staging
	// RAM and Disk are the cache tiers; either may be nil (not cached there).
	RAM, Disk store.Tier
	// ChunkSize is the unit of caching; 0 means 8 MiB.
	ChunkSize int64
	// ReadAhead is how many chunks a reader fetches ahead; 0 means 4.
	ReadAhead int
	// Freshness is the rule for buckets not named in Buckets.
	Freshness Freshness
	Buckets   map[string]Freshness
	// WriteMode is the write rule for buckets not named in WriteModes;
	// "" means WriteThrough.
	WriteMode  WriteMode
	WriteModes map[string]WriteMode
	// MetaEntries bounds the cached HEAD entries; 0 means 200,000.
	MetaEntries int
	// ListPages bounds the cached LIST pages; 0 means 10,000.
	ListPages int
	// Now is the clock freshness is judged by (metadata and listing
	// ages); nil means time.Now. Tests inject one to age entries
	// without waiting. (The catalog stamps its loads with time.Now: a
	// clock ahead of it only makes them older.)
	Now func() time.Time
	// FetchTimeout bounds an origin metadata call, and how long a chunk
	// fetch may go without receiving a byte (a slow fetch that makes
	// progress runs as long as it needs); 0 means 2 minutes.
	FetchTimeout time.Duration
	// OriginTimeout bounds how long a request waits for a revalidation
	// it may not skip (see Freshness) before it is answered from stale
	// metadata or fails; 0 means 5 s. (The origin's own calls are bounded
	// by the guard in front of it, a store.OriginMonitor.)
	OriginTimeout time.Duration
	// Health, if set, reports the origin's health (the guard in front
	// of it) for the status report and readiness.
	Health store.OriginMonitor
	// PutCacheBytes bounds the memory that write-through PUTs may hold to
	// fill the cache with what they wrote (objects of one chunk at most);
	// 0 means 256 MiB, < 0 means PUTs do not fill the cache.
	PutCacheBytes int64
	// WorkingBytes is the working memory: it bounds what the node holds
	// for reads in flight, chunks read ahead or not yet sent to their
	// client and chunks being fetched (see budget.go). Past it read-ahead
	// stops and a new read waits AdmitWait for room, then fails with
	// ErrBusy. 0 means 128 MiB.
	WorkingBytes int64
	// AdmitWait bounds how long a new read waits for working memory
	// before it fails with ErrBusy; 0 means 2 s. (A read under way waits
	// up to FetchTimeout for its next chunk.)
	AdmitWait time.Duration
	// DiskQueueBytes bounds the chunks waiting to be written to the disk
	// tier; past it, disk writes are dropped. 0 means 128 MiB.
	DiskQueueBytes int64
	// Catalog, if set, is the node's object index: warm-ups load it, and
	// LIST under a prefix it covers is answered from it while the
	// bucket's freshness rule allows (see listFromCatalog).
	Catalog store.Catalog
	// Pins are the pinned prefixes (the same set the tiers were given);
	// nil means none can be pinned.
	Pins store.Pins
	// Quotas cap each bucket's bytes in each tier (the same set the
	// tiers were given); nil means none.
	Quotas store.Quotas
	// Peers, if set, is the cluster: chunks live on their owners (see
	// peers.go); nil is a node on its own (solo.go). Owners is R, the owners of a chunk read through (0
	// means 1); data written through the cluster gets max(R, 2).
	Peers  Peers
	Owners int
	// Everywhere, if set, names the objects every live member owns (the
	// configuration's everywhere prefixes): a chunk's first owner reads
	// it from the origin for the cluster and places it on every member,
	// whichever member's read brought it; a member that misses it before
	// then asks that owner and keeps the answer in its own tiers, not as
	// a hot copy.
	Everywhere func(bucket, key string) bool
	// Hot, if set, holds copies of chunks this node read from their owner
	// for its clients, in RAM (the room the RAM tier's owned chunks
	// leave). HotDisk, if set, holds them on disk (the room the disk
	// tier's owned chunks leave): a data set that fits every node's disk
	// is read locally everywhere once read. Neither ever holds a chunk
	// in place of an owned one (store/ram/shared.go, store/disk/shared.go).
	Hot, HotDisk store.Tier
	// Tee, if set, is where write-through uploads keep a local copy of
	// their parts (opened empty), so the completed object fills the
	// cache without a download; nil means no such fill. The engine owns
	// it from New on: Close (or a failed New) closes it.
	Tee store.PartTee
	// Registerer receives the engine's metrics; nil means none.
	Registerer prometheus.Registerer
	Logger     zerolog.Logger
}

// DefaultChunkSize is the chunk size when Options.ChunkSize is 0.
const DefaultChunkSize = 8 << 20

func (o Options) normalize() (Options, error) {
	if o.Origin == nil {
		return o, fmt.Errorf("gateway: Options.Origin is nil")
	}
	if o.ChunkSize == 0 {
		o.ChunkSize = DefaultChunkSize
	}
	if o.ChunkSize < 4096 {
		return o, fmt.Errorf("gateway: chunk size %d below 4 KiB", o.ChunkSize)
	}
	if o.ReadAhead <= 0 {
		o.ReadAhead = 4
	}
	if o.MetaEntries <= 0 {
		o.MetaEntries = 200_000
	}
	if o.ListPages <= 0 {
		o.ListPages = 10_000
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.FetchTimeout <= 0 {
		o.FetchTimeout = 2 * time.Minute
	}
	if o.OriginTimeout <= 0 {
		o.OriginTimeout = store.DefaultOriginTimeout
	}
	if o.WorkingBytes <= 0 {
		o.WorkingBytes = 128 << 20
	}
	if o.AdmitWait <= 0 {
		o.AdmitWait = 2 * time.Second
	}
	if o.DiskQueueBytes <= 0 {
		o.DiskQueueBytes = 128 << 20
	}
	if o.PutCacheBytes == 0 {
		o.PutCacheBytes = 256 << 20
	}
	var err error
	if o.Freshness, err = o.Freshness.normalize(); err != nil {
		return o, err
	}
	buckets := make(map[string]Freshness, len(o.Buckets))
	for name, f := range o.Buckets {
		if buckets[name], err = f.normalize(); err != nil {
			return o, fmt.Errorf("bucket %s: %w", name, err)
		}
	}
	o.Buckets = buckets
	if o.WriteMode, err = ParseWriteMode(string(o.WriteMode)); err != nil {
		return o, err
	}
	modes := make(map[string]WriteMode, len(o.WriteModes))
	for name, m := range o.WriteModes {
		if modes[name], err = ParseWriteMode(string(m)); err != nil {
			return o, fmt.Errorf("bucket %s: %w", name, err)
		}
	}
	o.WriteModes = modes
	return o, nil
}
