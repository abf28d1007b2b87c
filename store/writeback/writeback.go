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
//
// Layout of Dir: journal.db (the bbolt journal of pending operations);
// stage/, a parts.Store of the write-back multipart uploads, open ones and
// completed ones waiting for the origin (sealed); puts/, a parts.Store of
// single Puts, each a sealed one-part upload (an unsealed one is a Put cut
// by a crash, removed at Open; keeping them apart from stage/ means such
// leftovers are never listed as a client's multipart upload); and tmp/,
// bodies of unknown size being spooled (emptied at Open).
package writeback

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"go.etcd.io/bbolt"

	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/parts"
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
	Registerer         prometheus.Registerer
	Logger             zerolog.Logger
}

// Observer hears of a write-back object's life; Start registers the
// observers (see store.StageObserver).
type Observer = store.StageObserver

const (
	defaultDirtyLimit = 8 << 30
	defaultWorkers    = 4
	defaultRetryMin   = time.Second
	defaultRetryMax   = time.Minute
)

func (o Options) normalize() (Options, error) {
	if o.Origin == nil {
		return o, errors.New("writeback: Options.Origin is required")
	}
	if o.Dir == "" {
		return o, errors.New("writeback: Options.Dir is required")
	}
	if o.WriteBack == nil {
		o.WriteBack = func(string) bool { return false }
	}
	if o.DirtyLimit <= 0 {
		o.DirtyLimit = defaultDirtyLimit
	}
	if o.Workers <= 0 {
		o.Workers = defaultWorkers
	}
	if o.RetryMin <= 0 {
		o.RetryMin = defaultRetryMin
	}
	if o.RetryMax <= 0 {
		o.RetryMax = defaultRetryMax
	}
	o.RetryMax = max(o.RetryMax, o.RetryMin)
	return o, nil
}

// errClosed is returned by calls on a closed Log.
var errClosed = errors.New("writeback: log closed")

// Log is the write-back layer. It implements store.Origin,
// store.Multipart and store.Copier, and is safe for concurrent use.
//
// Lock order: closeMu (shared), then commitMu, then mu. No I/O (origin,
// journal, stage) is done while holding mu.
type Log struct {
	opts     Options
	origin   store.Origin
	mp       store.Multipart // the origin's, or nil if it has none
	stage    *parts.Store    // multipart uploads and their completions
	puts     *parts.Store    // single Puts
	db       *bbolt.DB
	tmpDir   string
	m        *metrics
	log      zerolog.Logger
	restores yielder // clients reading staged copies hold uploads back

	// observers are set once by Start (under mu), read-only after.
	observers []Observer
	started   bool

	// ctx is cancelled by Close: uploads in flight stop (and stay
	// journaled). Pass-through writes and flushes waiting for uploads
	// end too, woken through changed and closed.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // the workers

	// closeMu is held shared by every call that uses the journal or the
	// stage, exclusively by Close while it closes them.
	closeMu sync.RWMutex

	// commitMu serialises the commits of new operations, so they are
	// journaled and installed in sequence order.
	commitMu sync.Mutex
	nextSeq  uint64 // guarded by commitMu: the seq of the next operation

	mu       sync.Mutex // guards the fields below and the keyState/op fields
	work     *sync.Cond // on mu: workers wait for the queue or Close
	keys     map[objKey]*keyState
	byBucket map[string]map[string]*keyState
	queue    []*keyState // keys that may have an upload to start
	timers   map[*time.Timer]struct{}
	// changed is closed (and replaced) whenever pending state changes:
	// an operation lands, fails, is superseded or is added.
	changed  chan struct{}
	uploads  map[string]*wbUpload // open write-back multipart uploads, by ID
	known    map[string]bool      // buckets seen to exist at the origin
	lastSeq  uint64               // the greatest seq installed
	dirty    int64                // bytes staged or reserved, not yet at the origin
	pending  int                  // operations not yet at the origin
	attempts uint64               // upload attempts finished (a clock for failures)
	closed   bool
}

var (
	_ store.Origin    = (*Log)(nil)
	_ store.Multipart = (*Log)(nil)
	_ store.Copier    = (*Log)(nil)
)

// Open opens the log in opts.Dir and replays its journal (entries not yet
// at the origin are queued again). Nothing uploads until Start.
func Open(opts Options) (*Log, error) {
	opts, err := opts.normalize()
	if err != nil {
		return nil, err
	}
	l := &Log{
		opts: opts, origin: opts.Origin, log: opts.Logger,
		tmpDir:   filepath.Join(opts.Dir, "tmp"),
		keys:     make(map[objKey]*keyState),
		byBucket: make(map[string]map[string]*keyState),
		timers:   make(map[*time.Timer]struct{}),
		changed:  make(chan struct{}),
		uploads:  make(map[string]*wbUpload),
		known:    make(map[string]bool),
		restores: newYielder(),
	}
	l.mp, _ = opts.Origin.(store.Multipart)
	l.work = sync.NewCond(&l.mu)
	if err := l.openFiles(); err != nil {
		return nil, err
	}
	if err := l.replay(); err != nil {
		l.closeFiles()
		return nil, err
	}
	l.m = newMetrics(l)
	if err := l.m.register(opts.Registerer); err != nil {
		l.closeFiles()
		return nil, err
	}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	return l, nil
}

// Start registers the observers, in the order they are told, and starts
// the uploads. It is called once, after the observers exist and before
// the first write: a write-back write before it would be acknowledged
// unobserved (no copy elsewhere).
func (l *Log) Start(observers ...Observer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.started {
		panic("writeback: Start called twice")
	}
	l.started, l.observers = true, observers
	for range l.opts.Workers {
		l.wg.Add(1)
		go l.worker()
	}
}

// openFiles creates Dir and opens the stage and the journal.
func (l *Log) openFiles() error {
	if err := os.MkdirAll(l.opts.Dir, store.PrivateDirMode); err != nil {
		return fmt.Errorf("writeback: %w", err)
	}
	// Spooled bodies of writes that never completed.
	if err := os.RemoveAll(l.tmpDir); err != nil {
		return fmt.Errorf("writeback: %w", err)
	}
	if err := os.MkdirAll(l.tmpDir, store.PrivateDirMode); err != nil {
		return fmt.Errorf("writeback: %w", err)
	}
	st, err := parts.Open(parts.Options{Dir: filepath.Join(l.opts.Dir, "stage")})
	if err != nil {
		return fmt.Errorf("writeback: open stage: %w", err)
	}
	puts, err := parts.Open(parts.Options{Dir: filepath.Join(l.opts.Dir, "puts")})
	if err != nil {
		st.Close()
		return fmt.Errorf("writeback: open stage: %w", err)
	}
	db, err := openJournal(filepath.Join(l.opts.Dir, "journal.db"))
	if err != nil {
		st.Close()
		puts.Close()
		return err
	}
	l.stage, l.puts, l.db = st, puts, db
	return nil
}

func (l *Log) closeFiles() error {
	return errors.Join(l.db.Close(), l.stage.Close(), l.puts.Close())
}

// Persisted reports whether bucket/key has no write waiting for the
// origin (true for keys the log never saw).
func (l *Log) Persisted(bucket, key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	ks := l.keys[objKey{bucket, key}]
	return ks == nil || ks.cur == nil && ks.next == nil
}

// Stats is the log's state.
type Stats struct {
	DirtyBytes   int64
	DirtyObjects int
}

// Stats returns the log's state.
func (l *Log) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Stats{DirtyBytes: l.dirty, DirtyObjects: l.pending}
}

// Close stops the uploader (waiting for uploads in progress to stop) and
// closes the journal. Pending entries stay journaled for the next Open.
// Calls in progress that use the journal or the stage (a write-back Put
// reading its body, say) are waited for; later calls fail.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	for t := range l.timers {
		t.Stop()
	}
	clear(l.timers)
	l.work.Broadcast()
	l.notifyLocked()
	l.mu.Unlock()
	l.cancel()
	l.wg.Wait()
	l.closeMu.Lock()
	defer l.closeMu.Unlock()
	l.m.unregister(l.opts.Registerer)
	return l.closeFiles()
}

// enter marks the start of a call that uses the journal or the stage; the
// caller calls the returned function when done. It fails once the Log is
// closed.
func (l *Log) enter() (func(), error) {
	l.closeMu.RLock()
	l.mu.Lock()
	closed := l.closed
	l.mu.Unlock()
	if closed {
		l.closeMu.RUnlock()
		return nil, errClosed
	}
	return l.closeMu.RUnlock, nil
}

// writeBack reports whether writes to bucket are staged.
func (l *Log) writeBack(bucket string) bool { return l.opts.WriteBack(bucket) }
