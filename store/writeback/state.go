// In-memory pending state: per key, the operation being uploaded and the
// one waiting behind it; installing a new operation (superseding the
// waiting one) and dropping operations that are done.
package writeback

import (
	"errors"
	"time"

	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/parts"
)

// objKey names an object.
type objKey struct{ bucket, key string }

// keyState is the pending state of one key. Every put or delete replaces
// the whole object, so only the newest operation of a key matters: a new
// one supersedes the one waiting (never the one uploading). Hence at most
// two operations per key: cur (uploading, owned by a worker) and next
// (waiting; a failed upload goes back here for its retry).
//
// Reads of the key are answered by next if set, else cur, else the origin.
// All fields are guarded by Log.mu.
type keyState struct {
	bucket, key string
	cur         *op
	next        *op
	// committing counts journal commits of new operations of the key in
	// progress; direct counts pass-through writes of the key in progress.
	// While either is non-zero no upload of the key may start.
	committing int
	direct     int
	queued     bool // in Log.queue
}

// latest returns the operation reads see, or nil.
func (ks *keyState) latest() *op {
	if ks.next != nil {
		return ks.next
	}
	return ks.cur
}

// op is one journaled operation and its in-memory state (guarded by
// Log.mu, except the record and asm, which never change once installed).
type op struct {
	record
	asm   *parts.Assembly // put: the staged object
	dirty int64           // bytes counted in Log.dirty for this op
	// floor is the oldest seq this op stands for: its own, or that of the
	// op it superseded (so a Flush waiting for that one waits for this).
	floor     uint64
	attempts  int
	notBefore time.Time // no retry before
	lastErr   error     // of the last failed attempt
	failed    error     // set when the last attempt failed permanently
	failedAt  uint64    // Log.attempts when failed was set
	readers   int       // open readers of the staged object
	dropped   bool      // no longer pending; stage removed when readers reach 0
}

// keyStateLocked returns the state of bucket/key, creating it.
func (l *Log) keyStateLocked(bucket, key string) *keyState {
	k := objKey{bucket, key}
	ks := l.keys[k]
	if ks == nil {
		ks = &keyState{bucket: bucket, key: key}
		l.keys[k] = ks
		m := l.byBucket[bucket]
		if m == nil {
			m = make(map[string]*keyState)
			l.byBucket[bucket] = m
		}
		m[key] = ks
	}
	return ks
}

// tidyLocked forgets ks if nothing refers to it any more.
func (l *Log) tidyLocked(ks *keyState) {
	if ks.cur != nil || ks.next != nil || ks.committing > 0 || ks.direct > 0 {
		return
	}
	k := objKey{ks.bucket, ks.key}
	if l.keys[k] != ks {
		return
	}
	delete(l.keys, k)
	if m := l.byBucket[ks.bucket]; m != nil {
		delete(m, ks.key)
		if len(m) == 0 {
			delete(l.byBucket, ks.bucket)
		}
	}
}

// notifyLocked wakes everyone waiting for a change of pending state.
func (l *Log) notifyLocked() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// enqueueLocked offers ks to the workers (they check whether an upload
// may start).
func (l *Log) enqueueLocked(ks *keyState) {
	if ks.queued || ks.next == nil || l.closed {
		return
	}
	ks.queued = true
	l.queue = append(l.queue, ks)
	if l.work != nil {
		l.work.Signal()
	}
}

// dropLocked ends o's life as a pending operation (it landed or was
// superseded) and returns it if its staged object is to be removed now
// (else nil: no staged object, or its removal waits for the last reader).
func (l *Log) dropLocked(o *op) *op {
	if o.dropped {
		return nil
	}
	o.dropped = true
	l.dirty -= o.dirty
	l.pending--
	if o.asm != nil && o.readers == 0 {
		return o
	}
	return nil
}

// storeOf returns the store holding o's staged object: multipart
// completions stay in the store of uploads, single puts have their own.
func (l *Log) storeOf(o *op) *parts.Store {
	if o.Multipart {
		return l.stage
	}
	return l.puts
}

// removeStage deletes the staged object of a dropped op (nil does
// nothing).
func (l *Log) removeStage(o *op) {
	if o == nil {
		return
	}
	if err := l.storeOf(o).Remove(o.StageID); err != nil && !errors.Is(err, store.ErrNoSuchUpload) {
		l.log.Warn().Err(err).Str("upload", o.StageID).Msg("writeback: remove staged object")
	}
}

// install commits o (a new operation, its bytes already reserved in
// dirty and staged durably) to the journal and makes it the key's
// pending operation, superseding the one waiting. The write is
// acknowledged when install returns nil.
func (l *Log) install(o *op) error {
	l.commitMu.Lock()
	defer l.commitMu.Unlock()
	o.Seq = l.nextSeq
	o.floor = o.Seq
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return errClosed
	}
	ks := l.keyStateLocked(o.Bucket, o.Key)
	ks.committing++
	victim := ks.next
	l.mu.Unlock()

	var drop []uint64
	if victim != nil {
		drop = append(drop, victim.Seq)
	}
	err := l.journalCommit(&o.record, drop...)

	l.mu.Lock()
	ks.committing--
	if err != nil {
		l.enqueueLocked(ks)
		l.tidyLocked(ks)
		l.mu.Unlock()
		return err
	}
	l.nextSeq++
	l.lastSeq = o.Seq
	l.pending++
	var removes []*op
	// ks.next is victim, or (if it was nil) an op whose upload failed
	// meanwhile and came back for a retry: superseded all the same, but
	// its record is deleted below.
	var late *op
	if old := ks.next; old != nil {
		o.floor = old.floor
		removes = append(removes, l.dropLocked(old))
		if old != victim {
			late = old
		}
	}
	ks.next = o
	l.enqueueLocked(ks)
	l.notifyLocked()
	l.mu.Unlock()
	if late != nil {
		if err := l.journalDelete(late.Seq); err != nil {
			// On replay the newer record supersedes it anyway.
			l.log.Warn().Err(err).Msg("writeback: delete superseded record")
		}
	}
	for _, r := range removes {
		l.removeStage(r)
	}
	return nil
}

// reserve counts n more dirty bytes, or fails with ErrSlowDown if that
// would pass the limit.
func (l *Log) reserve(n int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n > 0 && l.dirty+n > l.opts.DirtyLimit {
		return store.ErrSlowDown
	}
	l.dirty += n
	return nil
}

// release uncounts n dirty bytes.
func (l *Log) release(n int64) {
	if n == 0 {
		return
	}
	l.mu.Lock()
	l.dirty -= n
	l.mu.Unlock()
}
