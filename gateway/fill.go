// Background fills: an object written through this node whose bytes are
// local (a write-through multipart upload's tee, a write-back object's
// staged copy) is brought into the tiers after it was acknowledged, so the
// first restore of a checkpoint is a hit rather than a download.
package gateway

import (
	"context"
	"time"

	"github.com/granary-dev/granary/store"
)

// fillPace is how often a paced filler looks at the disk queue again.
const fillPace = 5 * time.Millisecond

// fillYield bounds how long a fill waits for writes in progress before
// its next chunk, so a steady stream of writes slows a fill, never stops
// it.
const fillYield = 2 * time.Second

// yieldToWrites waits (up to fillYield) while request bodies are being
// written through this node: acknowledging a checkpoint is on a training
// job's critical path, filling the cache behind the last one is not.
func (e *Engine) yieldToWrites(ctx context.Context) {
	e.yieldWhile(ctx, func() bool { return e.writing.Load() > 0 })
}

// yieldToClients is yieldToWrites that also waits for objects being
// streamed from this node: a restore right after a save is on the
// critical path too, and the fill of what it restores is not.
func (e *Engine) yieldToClients(ctx context.Context) {
	e.yieldWhile(ctx, func() bool { return e.writing.Load()+e.reading.Load() > 0 })
}

// yieldWhile waits while busy reports true, up to fillYield.
func (e *Engine) yieldWhile(ctx context.Context, busy func() bool) {
	deadline := time.Now().Add(fillYield)
	for busy() && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return
		case <-time.After(4 * fillPace):
		}
	}
}

// writeStarted counts a request body being written; the func it returns
// ends it.
func (e *Engine) writeStarted() func() {
	e.writing.Add(1)
	return func() { e.writing.Add(-1) }
}

// fillAsync fills the tiers with info's object on a goroutine the engine
// waits for at Close, then calls done (if set).
func (e *Engine) fillAsync(info store.ObjectInfo, done func()) {
	e.fills.Add(1)
	e.m.fills.Inc()
	go func() {
		defer e.fills.Done()
		defer e.m.fills.Dec()
		if info.Size > 0 && info.ETag != "" {
			e.fillFrom(e.fillCtx, info)
		}
		if done != nil {
			done()
		}
	}()
}

// fillFrom brings every chunk of info into the tiers, one at a time,
// through the flights (so a reader of the same chunk joins rather than
// doubles the work), pacing itself on the disk queue so the disk tier gets
// every chunk. The flights read the origin as usual: for these objects
// that is a local copy (see teeReader, and the write-back log's Get).
// A chunk read from a tee skipped the disk queue (see runFlight), and so
// may one a reader brought into RAM: the fill queues those here, paced,
// behind the readers (a chunk already on disk costs the tier a lookup).
func (e *Engine) fillFrom(ctx context.Context, info store.ObjectInfo) {
	cs := e.opts.ChunkSize
	for idx := int64(0); idx*cs < info.Size; idx++ {
		e.yieldToClients(ctx)
		if ctx.Err() != nil {
			return
		}
		n := e.chunkLen(info.Size, idx)
		w := newWalker(forFill, e.chunkID(info, idx), n, wantWrite)
		w.lends = true // a chunk RAM holds is lent, not copied: its lease is released here or by the disk job
		var ref chunkRef
		var err error
		e.background(ctx, func() {
			got, _ := e.walk(&w) // its plan ends at the flight rung
			ref = got.ref
			err = ref.stored(ctx, n)
		})
		if err != nil || !e.fillDisk(ctx, w.id, ref, n) {
			release(ref.lease)
		}
		if err != nil {
			return
		}
	}
}

// fillDisk queues chunk id (n bytes, stored: ref) for the disk tier
// unless its flight did already, and reports whether the disk job took
// over ref's lease (on RAM's bytes) to release once written.
func (e *Engine) fillDisk(ctx context.Context, id store.ChunkID, ref chunkRef, n int64) bool {
	if e.filler == nil || (ref.fl != nil && !ref.fl.staged) {
		return false // its flight queued it for the disk
	}
	b, err := ref.bytesAt(ctx, 0)
	if err != nil || int64(len(b)) != n {
		return false
	}
	e.filler.waitRoom(ctx, n)
	e.filler.enqueue(fillJob{id: id, data: b, keep: true, paced: true, lease: ref.lease}) // held already: a lookup
	return true
}

// fillWriteBack fills the tiers with a write-back object too large for the
// put path's own copy: the write-back log serves it from its staged copy.
func (e *Engine) fillWriteBack(info store.ObjectInfo) {
	if e.writeMode(info.Bucket) == WriteBack && info.Size > e.opts.ChunkSize {
		e.fillAsync(info, nil)
	}
}
