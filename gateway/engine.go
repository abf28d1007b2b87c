// Package gateway is Granary's caching engine: it answers S3 operations from
// the cache tiers where it can and from the origin where it must, with no
// knowledge of HTTP.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"golang.org/x/sync/singleflight"

	"github.com/granary-dev/granary/store"
)

// ErrInvalidRange means a range does not overlap the object.
var ErrInvalidRange = errors.New("gateway: range not satisfiable")

// Range is a parsed HTTP byte range. Exactly one form is used:
// Suffix > 0 means the last Suffix bytes; otherwise Start..End inclusive,
// with End < 0 meaning to the end of the object.
type Range struct {
	Start, End int64
	Suffix     int64
}

// Resolve returns the offset and length r selects in an object of size
// bytes, or ErrInvalidRange.
func (r Range) Resolve(size int64) (off, n int64, err error) {
	if r.Suffix > 0 {
		if size == 0 {
			return 0, 0, ErrInvalidRange
		}
		n = min(r.Suffix, size)
		return size - n, n, nil
	}
	if r.Start < 0 || r.Start >= size || (r.End >= 0 && r.End < r.Start) {
		return 0, 0, ErrInvalidRange
	}
	end := size - 1
	if r.End >= 0 && r.End < end {
		end = r.End
	}
	return r.Start, end - r.Start + 1, nil
}

// GetOptions shape a Get. Check, if set, runs on the object's info before
// any body byte is read; its error is returned as is (conditional headers).
type GetOptions struct {
	Range *Range
	Check func(store.ObjectInfo) error
	// FileFrom: the caller sends a body of at least this many bytes from
	// a file (Object.File) by reference; a disk hit may then come unread
	// (diskfile.go). 0: never.
	FileFrom int64
}

// FileWriter is a writer that can also send bytes lying in a file, by
// reference (sendfile), after what it was written before: Object.WriteTo
// hands it the spans of a streamed body that lie in one. WriteFile
// returns errors.ErrUnsupported, having sent nothing, where it would
// rather be written the bytes (a span too small to pay, a connection
// with no socket of its own).
type FileWriter interface {
	io.Writer
	WriteFile(fd uintptr, off int64, n int) (int64, error)
}

// Object is an open object body. Offset and Length give the bytes it
// yields (the whole object when no range was asked). The caller must Close.
type Object struct {
	Info   store.ObjectInfo
	Offset int64
	Length int64
	io.ReadCloser
	whole  []byte      // the body as one slice, when it is already in memory
	mem    bytesReader // ReadCloser when whole is set: one allocation per Get
	within int64       // where whole starts in its chunk
	file   *fileBody   // ReadCloser when the body is lent unread from a file
}

// WriteTo writes the body to w, straight from the cache's memory where the
// body's reader allows it.
func (o *Object) WriteTo(w io.Writer) (int64, error) {
	if wt, ok := o.ReadCloser.(io.WriterTo); ok {
		return wt.WriteTo(w)
	}
	return io.Copy(w, struct{ io.Reader }{o.ReadCloser})
}

// Bytes returns the whole body as one slice when it is already in memory
// (a small object in the RAM tier), so a server can send it without a copy.
// The slice must not be modified.
//
// The slice stays valid until the object is closed: a server that sends
// it after its handler returns closes the object once it is sent.
func (o *Object) Bytes() ([]byte, bool) { return o.whole, o.whole != nil }

// File returns where the bytes Bytes returns also lie in a file, when
// they do (a chunk of RAM's arena): the kernel can send them from there
// (sendfile) until the object is closed.
func (o *Object) File() (fd uintptr, off int64, ok bool) {
	if o.whole == nil {
		return 0, 0, false
	}
	return leaseFile(o.mem.lease, o.within)
}

// FileOnly returns where the body lies in a file when it came from the
// disk tier unread (GetOptions.FileFrom; Bytes then has none): the
// caller sends it from there until the object is closed, or reads it.
func (o *Object) FileOnly() (fd uintptr, off int64, ok bool) {
	if o.file == nil {
		return 0, 0, false
	}
	fd, at := o.file.chunk.File()
	return fd, at + o.file.off, true
}

// Engine is the caching engine. It is safe for concurrent use.
type Engine struct {
	opts     Options
	origin   store.Origin // opts.Origin, counted
	m        *metrics
	log      zerolog.Logger
	meta     *metaCache
	lists    *listCache
	sf       singleflight.Group // metadata loads, keyed by metaKey
	putBytes atomic.Int64       // bytes held by PUTs for the cache
	writes   writes             // writes in flight, by metaKey
	putTees  atomic.Uint64      // names the tees of single PUTs
	finished finishedUploads    // recent completions (finished.go)

	filler *diskFiller // nil without a disk tier
	tees   *tees       // nil without Options.Tee
	peer   *peerState  // the cluster, or this node on its own (solo.go)

	fills     sync.WaitGroup // background fills (see fill.go) and revalidations
	revals    revalidations  // background revalidations (see revalidate.go)
	buckets   bucketStats    // chunk lookups per bucket
	started   time.Time
	writing   atomic.Int64 // request bodies being written (fills yield)
	reading   atomic.Int64 // object readers streaming (fills yield)
	y         yielder      // background work yields to clients (yield.go)
	fillCtx   context.Context
	stopFills context.CancelFunc
	closing   sync.Once

	mem *memBudget // the working memory (budget.go)

	noter   store.ReadNoter // opts.Disk, if it counts reads RAM served (else nil)
	ramHits atomic.Uint64   // RAM hits walks recorded (noteUnseen samples them)

	spares   spareBufs            // buffers no tier kept (spares.go)
	intoDisk store.IntoGetter     // opts.Disk, if it reads into buffers (else nil)
	intoHot  store.IntoGetter     // opts.HotDisk, likewise
	spareFor func(n int64) []byte // spares.get, bound once (a method value allocates)

	mu      sync.Mutex // guards flights, flight.retired and flight.charge
	flights map[store.ChunkID]*flight
}

// New returns an Engine over opts.
func New(opts Options) (*Engine, error) {
	opts, err := opts.normalize()
	if err != nil {
		if opts.Tee != nil {
			opts.Tee.Close() // the engine's from New on (see Options.Tee)
		}
		return nil, err
	}
	m := newMetrics()
	e := &Engine{
		opts:    opts,
		origin:  countingOrigin{Origin: opts.Origin, m: m},
		m:       m,
		log:     opts.Logger.With().Str("component", "gateway").Logger(),
		meta:    newMetaCache(opts.MetaEntries),
		lists:   newListCache(opts.ListPages),
		flights: make(map[store.ChunkID]*flight),
		mem:     newMemBudget(opts.WorkingBytes),
		started: time.Now(),
		peer:    newPeerState(opts.Peers),
	}
	e.noter, _ = opts.Disk.(store.ReadNoter)
	e.intoDisk, _ = opts.Disk.(store.IntoGetter)
	e.intoHot, _ = opts.HotDisk.(store.IntoGetter)
	e.spareFor = e.spares.get
	e.fillCtx, e.stopFills = context.WithCancel(context.Background())
	e.peer.run(e.peerLoop)
	if opts.Tee != nil {
		e.tees = newTees(opts.Tee)
	}
	collectors := append(e.mem.collectors(), prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "granary_reads_streaming",
		Help: "Object reads whose body is being sent (or waits for its client to take it)."},
		func() float64 { return float64(e.reading.Load()) }))
	if opts.Disk != nil {
		e.filler = newDiskFiller(e, opts.Disk, opts.DiskQueueBytes)
		collectors = append(collectors, e.filler.dropped)
	}
	if opts.Registerer != nil {
		if err := m.register(opts.Registerer, e.Tiers(), collectors...); err != nil {
			e.Close()
			return nil, fmt.Errorf("gateway: metrics: %w", err)
		}
	}
	return e, nil
}

// Close writes the chunks still queued for the disk tier and stops the
// engine's goroutines; the origin and tiers, which the caller owns, stay
// open. Reads must have ended before Close.
func (e *Engine) Close() error {
	e.closing.Do(func() {
		e.stopFills()
		e.fills.Wait()
		e.peer.loop.Wait()
		e.peer.pushes.Wait()
		if e.tees != nil {
			if err := e.tees.close(); err != nil {
				e.log.Warn().Err(err).Msg("closing the tee store")
			}
		}
		if e.filler != nil {
			e.filler.close()
		}
	})
	return nil
}

// OriginHealth reports the origin's health, and false if the engine was
// given no way to know it (Options.Health).
func (e *Engine) OriginHealth() (store.OriginHealth, bool) {
	if e.opts.Health == nil {
		return store.OriginHealth{}, false
	}
	return e.opts.Health.Health(), true
}

func (e *Engine) freshness(bucket string) Freshness {
	if f, ok := e.opts.Buckets[bucket]; ok {
		return f
	}
	return e.opts.Freshness
}

// detached returns a context for origin work shared by several requests:
// it outlives the request that started it, bounded by the fetch timeout.
func (e *Engine) detached(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), e.opts.FetchTimeout)
}

// forgetObject drops everything cached about bucket/key.
func (e *Engine) forgetObject(bucket, key string) {
	e.meta.drop(metaKey(bucket, key))
	e.sf.Forget(metaKey(bucket, key))
	e.forgetData(bucket, key)
	e.peer.pending.drop(bucket, key)
}

// forgetData drops the chunks of every version of bucket/key and the
// bucket's listings, but not its metadata.
func (e *Engine) forgetData(bucket, key string) {
	e.lists.dropBucket(bucket)
	for _, t := range e.Tiers() {
		if err := t.DeleteObject(bucket, key); err != nil {
			e.log.Warn().Err(err).Str("bucket", bucket).Str("key", key).Str("tier", t.Name).Msg("tier invalidate failed")
		}
	}
}
