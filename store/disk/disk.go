// Package disk is the NVMe cache tier. Small chunks are appended to large
// segment files, large chunks are files of their own, and a bbolt index
// (store/index) maps each chunk ID to its bytes and their CRC32C. Eviction
// works on whole units (a segment or a chunk file), least recently used
// first, between a high and a low watermark, as in CacheLib's Navy. Units
// holding chunks of pinned objects (Options.Pins) are never evicted; see
// pin.go. Per-bucket quotas (Options.Quotas) cap the chunk bytes each
// bucket may hold; see quota.go.
//
// On-disk layout under Options.Dir:
//
//	index.db                 the bbolt index
//	segments/<unit>.seg      segment files, <unit> as 16 hex digits
//	chunks/<unit>.chunk      large-chunk files (<unit>.tmp while written)
//
// Crash safety rests on one invariant: a chunk's bytes are written before
// its index entry, and every read checks the CRC32C. Nothing is fsynced; an
// entry whose bytes a crash lost fails the check and is dropped (the chunk
// is fetched again); bytes whose entry a crash lost are orphans that Open
// removes (files) or dead space that eviction reclaims (segments).
package disk

import (
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/rs/zerolog"

	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/index"
)

// Errors of the disk tier, besides the store sentinels.
var (
	// ErrClosed is returned by every operation on a closed tier.
	ErrClosed = errors.New("disk: tier closed")
	// ErrIO means the local disk or the index failed; the chunk was not
	// stored (Put) or not removed (DeleteObject).
	ErrIO = errors.New("disk: i/o error")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Defaults and bounds of Options.
const (
	DefaultHighWater   = 0.95
	DefaultLowWater    = 0.85
	DefaultSegmentSize = 64 << 20
	DefaultSmallMax    = 1 << 20
	// minSegmentSize bounds the segment size from below when a small
	// capacity shrinks it.
	minSegmentSize = 4 << 10
)

// Options configure a disk tier. Zero values take the documented defaults.
type Options struct {
	// Dir holds the index and the data files; created if missing. Required.
	Dir string
	// Capacity is the byte budget for data files (segments including their
	// dead space, and chunk files). Required, > 0.
	Capacity int64
	// HighWater and LowWater are fractions of Capacity: when usage passes
	// HighWater*Capacity, a Put evicts down to LowWater*Capacity (under
	// PolicyTinyLFU, by at most one SegmentSize; see admitsLocked). Defaults
	// 0.95 and 0.85; 0 < LowWater <= HighWater <= 1.
	HighWater, LowWater float64
	// SegmentSize is the size at which a segment is sealed and a new one
	// started. Default 64 MiB; lowered to Capacity/8 (at least 4 KiB) so a
	// segment stays a small unit of eviction.
	SegmentSize int64
	// SmallMax: chunks shorter than this are packed into segments, others
	// get a file each. Default 1 MiB; at most SegmentSize.
	SmallMax int64
	// SketchItems is about how many distinct chunks the admission sketch
	// tells apart. Default Capacity/16 KiB; clamped to [8192, 4M]. Its
	// estimates overcount when the chunks read lately outnumber it by far,
	// which lets unpopular chunks in: for epochs over a data set larger
	// than the tier, the data set's chunk count is the right value.
	SketchItems int64
	// Policy is the admission policy: PolicyTinyLFU (default when empty)
	// or PolicyLRU; see admission.go. Another name fails Open.
	Policy string
	// Logger receives recovery and corruption reports. Zero: no logging.
	Logger zerolog.Logger
	// Pins says which objects are pinned: their chunks are never evicted,
	// and a Put that only pinned units could make room for fails with
	// store.ErrPinnedFull (see pin.go). Nil: nothing is pinned.
	Pins store.PinSet
	// Quotas caps the chunk bytes each bucket may hold: a Put or
	// PutAlways that would take its bucket past its quota fails with
	// store.ErrOverQuota before admission and eviction, changing nothing
	// (see quota.go). Asked once per Put. Nil: no quotas.
	Quotas store.Quotas
	// Shared, if set, is a budget this tier shares with another (see
	// shared.go); Capacity is then at most its total. Yields says this
	// tier's chunks give way to the other's. A Shared has at most one
	// tier of each kind; the owner's opens first.
	Shared *Shared
	Yields bool
	// Writers is how many goroutines Put to the tier at once, at most,
	// each waiting for its Put before its next: the node's disk filler
	// (gateway.FillWorkers). Above one, their index inserts wait up to
	// a millisecond for each other to share a commit (index.Options);
	// a lone goroutine putting chunk after chunk would wait at each.
	// Zero: inserts share commits only when they evidently overlap.
	Writers int
}

// normalize validates o and fills in defaults.
func (o Options) normalize() (Options, error) {
	if o.Dir == "" {
		return o, errors.New("disk: Options.Dir is required")
	}
	if o.Capacity <= 0 {
		return o, fmt.Errorf("disk: Options.Capacity must be positive, got %d", o.Capacity)
	}
	if o.HighWater == 0 {
		o.HighWater = DefaultHighWater
	}
	if o.LowWater == 0 {
		o.LowWater = DefaultLowWater
	}
	if !(0 < o.LowWater && o.LowWater <= o.HighWater && o.HighWater <= 1) {
		return o, fmt.Errorf("disk: watermarks must satisfy 0 < low (%v) <= high (%v) <= 1", o.LowWater, o.HighWater)
	}
	if o.SegmentSize <= 0 {
		o.SegmentSize = DefaultSegmentSize
	}
	o.SegmentSize = max(min(o.SegmentSize, o.Capacity/8), minSegmentSize)
	if o.SmallMax <= 0 {
		o.SmallMax = DefaultSmallMax
	}
	o.SmallMax = min(o.SmallMax, o.SegmentSize)
	if o.SketchItems <= 0 {
		o.SketchItems = o.Capacity / sketchChunk
	}
	o.SketchItems = min(max(o.SketchItems, minSketchItems), maxSketchItems)
	var err error
	o.Policy, err = checkPolicy(o.Policy)
	return o, err
}

// Tier is a disk store.Tier. It is safe for concurrent use.
//
// Locking: closeMu is held shared by every operation for its whole
// duration and exclusively by Close, so Close never pulls a file or the
// index from under an operation. mu guards the unit table (units, lru,
// aside, used, active, pinActive, nextUnit, full, asideGen, staleAside)
// and each unit's refs, detached flag, admission counters and pin state.
// Lock order: closeMu, then bbolt's writer lock, then mu. mu is never held
// while calling into the index (eviction releases it to judge units, see
// pin.go), and never across file I/O except creating a segment file.
// qmu guards the per-bucket byte counts (bucketBytes, pending; see
// quota.go) and is taken after mu, never before it.
type Tier struct {
	opts     Options
	log      zerolog.Logger
	idx      *index.DB
	segDir   string
	chunkDir string

	closeMu sync.RWMutex
	closed  bool // guarded by closeMu

	mu       sync.Mutex
	units    map[uint64]*unit // live (not detached) units
	lru      unitList         // live evictable units, most recently accessed first
	used     atomic.Int64     // sum of live units' sizes; never > Capacity; changed under mu
	active   *unit            // segment taking appends, or nil
	nextUnit uint64           // next unit number; numbers are never reused
	full     bool             // eviction has run since Open (see admitsLocked)

	// Pinning (see pin.go).
	aside      unitList // live units judged pinned, out of the eviction order
	pinActive  *unit    // segment taking chunks pinned at Put time, or nil
	asideGen   uint64   // Generation aside was last re-judged under
	staleAside bool     // an aside unit's verdict was invalidated since

	adm *admission // PolicyTinyLFU's sketch; nil under PolicyLRU

	direct directWriter // how chunk files are written (direct_linux.go)

	// Quotas (see quota.go).
	qmu         sync.Mutex
	bucketBytes map[string]int64 // bucket -> chunk bytes in live units
	pending     map[string]int64 // bucket -> bytes of quota-checked Puts in flight

	// beforeReserve, if set (tests), runs in every Put just before its
	// admission check and reservation.
	beforeReserve func()

	evictions   atomic.Int64 // chunks dropped by eviction
	declined    atomic.Int64 // Puts declined by admission
	corruptions atomic.Int64 // chunks dropped because their bytes were bad
}

var _ store.Tier = (*Tier)(nil)
var _ store.VersionLister = (*Tier)(nil)
var _ store.Admitter = (*Tier)(nil)
var _ store.FileLender = (*Tier)(nil)
var _ store.Holder = (*Tier)(nil)
var _ store.Peeker = (*Tier)(nil)
var _ store.ReadNoter = (*Tier)(nil)

// Stats extends store.TierStats with the disk tier's own counters.
type Stats struct {
	store.TierStats
	// Corruptions counts chunks dropped on Get because their bytes failed
	// the CRC32C check, were short, or could not be read.
	Corruptions int64
	// Segments and Files count the live units of each kind.
	Segments, Files int
}

// Open opens (or creates) the tier in opts.Dir. An existing cache is
// reconciled with its files and kept; see recover.
func Open(opts Options) (*Tier, error) {
	opts, err := opts.normalize()
	if err != nil {
		return nil, err
	}
	t := &Tier{
		opts:     opts,
		log:      opts.Logger.With().Str("tier", "disk").Str("dir", opts.Dir).Logger(),
		segDir:   filepath.Join(opts.Dir, "segments"),
		chunkDir: filepath.Join(opts.Dir, "chunks"),
		units:    make(map[uint64]*unit),

		bucketBytes: make(map[string]int64),
		pending:     make(map[string]int64),
	}
	if opts.Policy == PolicyTinyLFU {
		t.adm = newAdmission(int(opts.SketchItems))
	}
	t.lru.init()
	t.aside.init()
	for _, d := range []string{t.segDir, t.chunkDir} {
		if err := os.MkdirAll(d, store.PrivateDirMode); err != nil {
			return nil, fmt.Errorf("%w: create %s: %v", ErrIO, d, err)
		}
	}
	if t.idx, err = t.openIndex(); err != nil {
		return nil, err
	}
	if err := t.recover(); err != nil {
		t.closeFiles()
		_ = t.idx.Close()
		return nil, err
	}
	if opts.Shared != nil {
		opts.Shared.join(t, opts.Yields)
	}
	return t, nil
}

// openIndex opens the index; a corrupt index file (a power loss under
// NoSync) is discarded, which empties the cache: recover then removes the
// data files as orphans.
func (t *Tier) openIndex() (*index.DB, error) {
	path := filepath.Join(t.opts.Dir, "index.db")
	o := index.Options{Inserters: t.opts.Writers}
	idx, err := index.Open(path, o)
	if errors.Is(err, index.ErrCorrupt) {
		t.log.Warn().Err(err).Msg("index unreadable; starting the disk cache empty")
		if rmErr := os.Remove(path); rmErr != nil {
			return nil, fmt.Errorf("%w: remove corrupt index: %v", ErrIO, rmErr)
		}
		idx, err = index.Open(path, o)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrIO, err)
	}
	return idx, nil
}

// Close closes the index and every file. Later operations fail with
// ErrClosed; closing twice is harmless.
func (t *Tier) Close() error {
	t.closeMu.Lock()
	defer t.closeMu.Unlock()
	if t.closed {
		return nil
	}
	t.closed = true
	t.closeFiles()
	if err := t.idx.Close(); err != nil {
		return fmt.Errorf("%w: close index: %v", ErrIO, err)
	}
	return nil
}

// closeFiles closes every open segment file but those lent (LendFile),
// which their last lease closes. No other operation is in flight (Close
// holds closeMu; Open has not returned the tier yet).
func (t *Tier) closeFiles() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, u := range t.units {
		switch {
		case u.f == nil:
		case u.refs > 1:
			u.orphaned = true
		default:
			_ = u.f.Close()
		}
	}
	t.units = make(map[uint64]*unit)
	t.lru.init()
	t.aside.init()
	t.active, t.pinActive = nil, nil
	t.resetBucketBytesLocked()
}

// Stats reports usage; UsedBytes counts data files as they lie on disk.
func (t *Tier) Stats() store.TierStats {
	t.mu.Lock()
	used := t.used.Load()
	t.mu.Unlock()
	return store.TierStats{
		UsedBytes:     used,
		CapacityBytes: t.capacity(),
		Chunks:        t.idx.Count(),
		Evictions:     t.evictions.Load(),
		Declined:      t.declined.Load(),
	}
}

// DiskStats reports Stats plus the disk tier's own counters.
func (t *Tier) DiskStats() Stats {
	s := Stats{TierStats: t.Stats(), Corruptions: t.corruptions.Load()}
	t.mu.Lock()
	for _, u := range t.units {
		if u.kind == index.InSegment {
			s.Segments++
		} else {
			s.Files++
		}
	}
	t.mu.Unlock()
	return s
}

// begin starts an operation: it holds closeMu shared until end is called.
func (t *Tier) begin() error {
	t.closeMu.RLock()
	if t.closed {
		t.closeMu.RUnlock()
		return ErrClosed
	}
	return nil
}

func (t *Tier) end() { t.closeMu.RUnlock() }

// ioErr translates a local failure once, flattening os and index error
// types into ErrIO (an index closed under us is ErrClosed).
func ioErr(op string, err error) error {
	if errors.Is(err, index.ErrClosed) {
		return ErrClosed
	}
	return fmt.Errorf("%w: %s: %v", ErrIO, op, err)
}
