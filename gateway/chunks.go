// Chunks in memory or arriving: the refs readers hold, the one flight per
// chunk that fetches it (started by the ladder's flight rung, ladder.go)
// and where a fetched chunk is stored.
package gateway

import (
	"context"
	"errors"
	"io"

	"github.com/granary-dev/granary/store"
)

// chunkRef is a chunk ready in memory (data) or arriving (fl); one is set.
// free says holding it costs the working memory nothing: data is the RAM
// (or hot) tier's own slice, which the tier's budget counts, or fl is a
// flight already in the air, paid for by whoever started it and bound
// for RAM. held says the ref is one of fl's holders (see spares.go), and
// pool that data is a buffer of spares no tier kept (a disk hit): the
// ref's owner calls release once done with the bytes, or never.
type chunkRef struct {
	data  []byte
	fl    *flight
	free  bool
	held  bool
	pool  *spareBufs
	lease store.Lease // data is lent by a tier (lookupRAM): release ends it
}

// bytesAt returns the chunk's bytes from off on that are in memory, waiting
// for at least one; io.EOF at the chunk's end. The caller must not modify
// them.
func (r chunkRef) bytesAt(ctx context.Context, off int) ([]byte, error) {
	if r.fl != nil {
		return r.fl.bytesAt(ctx, off)
	}
	if off >= len(r.data) {
		return nil, io.EOF
	}
	return r.data[off:], nil
}

// stored waits until the chunk (n bytes) is complete and, when a flight
// fetches it, through the flight's store into the tiers: a fill or warm-up
// that returns has its chunks in place, not merely read.
func (r chunkRef) stored(ctx context.Context, n int64) error {
	if _, err := r.bytesAt(ctx, int(n-1)); err != nil && err != io.EOF {
		return err
	}
	if r.fl == nil {
		return nil
	}
	select {
	case <-r.fl.settled:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (e *Engine) chunkID(info store.ObjectInfo, idx int64) store.ChunkID {
	return store.ChunkID{Bucket: info.Bucket, Key: info.Key, ETag: info.ETag, Index: idx}
}

// chunkLen is the length of chunk idx of an object of size bytes.
func (e *Engine) chunkLen(size, idx int64) int64 {
	return min(e.opts.ChunkSize, size-idx*e.opts.ChunkSize)
}

// costsNothing reports whether a reader may hold chunk id without paying
// the working memory for it: the RAM (or hot) tier holds it (looked up
// recording no access, counting no hit) or a flight for it is in the air.
func (e *Engine) costsNothing(id store.ChunkID) bool {
	for _, t := range []store.Tier{e.opts.RAM, e.opts.Hot} {
		if t != nil {
			if tierHas(t, id) {
				return true
			}
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.flights[id] != nil
}

// inAir reports whether f is still being fetched (not retired).
func (e *Engine) inAir(f *flight) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return !f.retired
}

// startFlight registers a flight for id, or returns the one in the air.
// A flight nobody paid for is charged its buffer in the working memory
// until it retires, whether or not there is room (it runs for a warm-up,
// a fill, a member asking; readers pay before they ask: objectReader.fill).
func (e *Engine) startFlight(id store.ChunkID, size int64, want intent, paid bool) (f *flight, started bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if f := e.flights[id]; f != nil {
		e.m.joins.Inc()
		f.want = f.want.joined(want)
		f.hold()
		return f, false
	}
	if !want.has(wantKept) { // a warm-up's or a fill's flight is no client's miss
		e.m.miss(id.Bucket)
		e.buckets.of(id.Bucket).misses.Add(1)
	}
	f = newFlight(size, want, &e.spares)
	if !paid {
		e.mem.force(size)
		f.charge = size
	}
	e.flights[id] = f
	return f, true
}

// hand passes n bytes of working memory to f, which gives them back when
// it retires (at once if it has): a reader letting go of a chunk still
// being fetched, so the fetch stays counted.
func (e *Engine) hand(f *flight, n int64) {
	e.mu.Lock()
	if !f.retired {
		f.charge, n = f.charge+n, 0
	}
	e.mu.Unlock()
	e.mem.give(n)
}

// runFlight fills f from body, or when body is nil from where its plan
// finds the chunk (flightPlan), then stores the chunk in the tiers and
// retires the flight. A body given is local (read from the origin here, this node stores it as
// read here) or not (read from its owner: a hot copy).
//
// The flight stays registered until the chunk is in the tiers (or failed),
// so a request always finds one or the other. A request may still miss the
// tiers just before a flight stores and retires; it then starts a second
// flight for the same chunk, which is why a flight looks in the tiers again
// before it reads the origin.
func (e *Engine) runFlight(id store.ChunkID, f *flight, body io.ReadCloser, local bool) {
	defer f.letGo() // last: retired, so no one joins it any more
	defer close(f.settled)
	defer e.retire(id, f)
	want := f.intent(&e.mu)
	staged := false
	if body == nil {
		w := flightWalker(id, int64(len(f.buf)), want)
		got, _ := e.walk(&w) // the origin rung ends every flight's plan
		switch {
		case got.err != nil:
			e.flightFailed(id, f, got.err)
			return
		case got.from == rungTiers:
			copy(f.buf, got.ref.data)
			f.publish(len(got.ref.data), nil, true)
			return
		case got.from == rungTee:
			staged, f.staged = true, true
		}
		// A body read from members is this node's own chunk only where
		// it owns it (else a hot copy); one from the tee or the origin
		// alone always is (mine is false only where owners are asked).
		body, local = got.body, w.mine
	}
	defer body.Close()
	data, err := f.fill(body)
	if err != nil {
		e.flightFailed(id, f, err)
		return
	}
	want = f.intent(&e.mu) // joiners may have added to it
	everywhere := e.everywhere(id)
	switch {
	case !local && !everywhere:
		e.storeHot(id, data, f)
	case !local || (want.has(wantAsked) && !everywhere):
		// Kept here alone: an everywhere chunk read from a member (every
		// member keeps it as its own; the member that read it from the
		// origin places it on the others), or a chunk a peer asked for.
		// An everywhere chunk a peer asked for goes to every member, the
		// asker too (it may keep its copy from the answer first).
		e.storeChunk(id, data, want.has(wantKept), true, f)
	default:
		// A chunk read from a tee is on this node's disk already: the
		// fill that owns the tee writes it to the disk tier, after the
		// readers.
		e.placeChunk(id, data, want, !staged, f)
	}
}

// retire unregisters f, unless another flight for id took its place, and
// gives back its charge to the working memory (once: retired marks it).
func (e *Engine) retire(id store.ChunkID, f *flight) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.flights[id] == f {
		delete(e.flights, id)
	}
	if !f.retired {
		f.retired = true
		e.mem.give(f.charge)
		f.charge = 0
	}
}

// flightFailed retires f before failing it, so no request joins a flight
// that is already lost: later ones start afresh.
func (e *Engine) flightFailed(id store.ChunkID, f *flight, err error) {
	e.retire(id, f)
	f.fail(err)
	if errors.Is(err, store.ErrPreconditionFailed) || errors.Is(err, store.ErrNoSuchKey) {
		// The version we cached metadata for is gone from the origin.
		e.forgetObject(id.Bucket, id.Key)
	}
	ev := e.log.Warn()
	if errors.Is(err, store.ErrOriginDown) {
		ev = e.log.Debug() // the guard logged the outage, once
	}
	ev.Err(err).Str("bucket", id.Bucket).Str("key", id.Key).Int64("chunk", id.Index).Msg("chunk fetch failed")
}

// storeChunk puts a complete chunk into RAM at once and, if toDisk, queues
// it for the disk; keep puts it past the tiers' admission policy. Tier
// errors only cost a later miss, so they are logged, not returned. If
// data is flight fl's buffer (else fl is nil) and RAM does not keep it,
// the buffer is spare once the disk queue is through with it.
func (e *Engine) storeChunk(id store.ChunkID, data []byte, keep, toDisk bool, fl *flight) {
	holds := false
	if e.opts.RAM != nil {
		_, holds = e.putTier(e.opts.RAM, "ram", id, data, keep)
	}
	if e.filler != nil && toDisk {
		e.filler.enqueue(fillJob{id: id, data: data, keep: keep, from: fl})
	}
	if fl != nil && !holds {
		fl.spare.Store(true)
	}
}

// putTier stores a chunk in t, past its admission policy if keep. A chunk
// too large for the tier, declined by its policy, without room because the
// rest is pinned, or past its bucket's quota, is not an error: it is only
// not cached.
//
// It reports whether t stored the chunk (data itself or a copy), and
// whether t may hold data itself: false only when t said it did not (one
// of those refusals) or keeps a copy (store.PutCopier), so that data may
// be reused. A Put that failed otherwise stored nothing but may hold data.
func (e *Engine) putTier(t store.Tier, name string, id store.ChunkID, data []byte, keep bool) (stored, holds bool) {
	var err error
	if a, ok := t.(store.Admitter); ok && keep {
		err = a.PutAlways(id, data)
	} else {
		err = t.Put(id, data)
	}
	if err == nil {
		return true, !putCopies(t, len(data))
	}
	if refused(err) {
		return false, false
	}
	e.log.Warn().Err(err).Str("bucket", id.Bucket).Str("key", id.Key).Msg(name + " tier put failed")
	return false, true
}

// putCopies reports whether t's Put of n bytes keeps a copy, not the
// caller's slice.
func putCopies(t store.Tier, n int) bool {
	c, ok := t.(store.PutCopier)
	return ok && c.PutCopies(n)
}

// refused reports whether a tier's Put refused a chunk (and so did not
// keep it): too large, not admitted, no room but pinned chunks, over quota.
func refused(err error) bool {
	return errors.Is(err, store.ErrTooLarge) || errors.Is(err, store.ErrNotAdmitted) ||
		errors.Is(err, store.ErrPinnedFull) || errors.Is(err, store.ErrOverQuota)
}
