// Chunk lookup: the tiers first (RAM, then disk, promoting disk hits to RAM),
// else one flight per chunk that reads the origin and fills the tiers.
package gateway

import (
	"context"
	"errors"
	"io"
	"slices"

	"github.com/granary-dev/granary/cluster"
	"github.com/granary-dev/granary/store"
)

// chunkRef is a chunk ready in memory (data) or arriving (fl); one is set.
// free says holding it costs the working memory nothing: data is the RAM
// (or hot) tier's own slice, which the tier's budget counts, or fl is a
// flight already in the air, paid for by whoever started it and bound
// for RAM.
type chunkRef struct {
	data []byte
	fl   *flight
	free bool
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

// look says which tiers record a lookup as an access. The tiers' admission
// policy counts accesses, so one read of a chunk must be recorded once by
// each tier it asks, however often the engine looks (the fast path, the
// reader's window, the fetch, the flight's second look).
type look int

const (
	lookAll  look = iota // a first look: both tiers record it
	lookDisk             // RAM was asked already: it only peeks
	lookNone             // a look again, or a fill's: both peek
)

// tierGet gets id from t, recording the access or only peeking.
func tierGet(t store.Tier, id store.ChunkID, record bool) ([]byte, error) {
	if p, ok := t.(store.Peeker); ok && !record {
		return p.Peek(id)
	}
	return t.Get(id)
}

// lookupRAM returns the chunk if the RAM tier, or the hot tier of copies
// read from owners, holds it.
func (e *Engine) lookupRAM(id store.ChunkID, record bool) ([]byte, bool) {
	tier := "ram"
	var b []byte
	err := store.ErrNotFound
	if e.opts.RAM != nil {
		b, err = tierGet(e.opts.RAM, id, record)
	}
	if err != nil && e.opts.Hot != nil {
		tier = "hot"
		b, err = tierGet(e.opts.Hot, id, record)
	}
	if err != nil {
		return nil, false
	}
	e.m.hit(id.Bucket, tier, len(b))
	e.buckets.of(id.Bucket).hits.Add(1)
	return b, true
}

// lookupDisk returns the chunk if the disk tier holds it, and promotes it.
func (e *Engine) lookupDisk(id store.ChunkID, record bool) ([]byte, bool) {
	if e.opts.Disk == nil {
		return nil, false
	}
	b, err := tierGet(e.opts.Disk, id, record)
	if err != nil {
		return nil, false
	}
	e.m.hit(id.Bucket, "disk", len(b))
	e.buckets.of(id.Bucket).hits.Add(1)
	if e.opts.RAM != nil {
		e.opts.RAM.Put(id, b) // best effort: a full RAM tier just misses later
	}
	return b, true
}

// lookupLen looks in RAM, then on disk, for a chunk of known length. A hit
// of another length (a tier filled under another chunk size) is a miss,
// never served.
func (e *Engine) lookupLen(id store.ChunkID, n int64, l look) ([]byte, bool) {
	ref, ok := e.lookupRef(id, n, l)
	return ref.data, ok
}

// lookupRef is lookupLen, saying whether the chunk came from RAM.
func (e *Engine) lookupRef(id store.ChunkID, n int64, l look) (chunkRef, bool) {
	b, ram := e.lookupRAM(id, l == lookAll)
	ok := ram
	if !ok {
		b, ok = e.lookupDisk(id, l != lookNone)
	}
	return chunkRef{data: b, free: ram}, ok && int64(len(b)) == n
}

// costsNothing reports whether a reader may hold chunk id without paying
// the working memory for it: the RAM (or hot) tier holds it (looked up
// recording no access, counting no hit) or a flight for it is in the air.
func (e *Engine) costsNothing(id store.ChunkID) bool {
	for _, t := range []store.Tier{e.opts.RAM, e.opts.Hot} {
		if t != nil {
			if _, err := tierGet(t, id, false); err == nil {
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

// chunk returns chunk idx of the object version info names, from a tier or
// from a flight (joined or started). It never blocks on the origin. paid
// says the caller (a reader) has paid the working memory for the chunk:
// a flight it starts is charged nothing more (see budget.go); a free ref
// needs no payment.
func (e *Engine) chunk(info store.ObjectInfo, idx int64, want intent, l look, paid bool) chunkRef {
	id := e.chunkID(info, idx)
	n := e.chunkLen(info.Size, idx)
	if ref, ok := e.lookupRef(id, n, l); ok {
		return ref
	}
	f, started := e.startFlight(id, n, want, paid)
	if !started {
		return chunkRef{fl: f, free: true}
	}
	go e.runFlight(id, f, nil, false)
	return chunkRef{fl: f}
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
		return f, false
	}
	e.m.miss(id.Bucket)
	e.buckets.of(id.Bucket).misses.Add(1)
	f = newFlight(size, want)
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

// runFlight fills f from body, or from where openSource reads it when body
// is nil, then stores the chunk in the tiers and retires the flight. A
// body given is local (read from the origin here, this node stores it as
// read here) or not (read from its owner: a hot copy).
//
// The flight stays registered until the chunk is in the tiers (or failed),
// so a request always finds one or the other. A request may still miss the
// tiers just before a flight stores and retires; it then starts a second
// flight for the same chunk, which is why a flight looks in the tiers again
// before it reads the origin.
func (e *Engine) runFlight(id store.ChunkID, f *flight, body io.ReadCloser, local bool) {
	defer close(f.settled)
	defer e.retire(id, f)
	want := f.intent(&e.mu)
	staged := false
	if body == nil {
		local = true
		if b, ok := e.lookupLen(id, int64(len(f.buf)), lookNone); ok {
			copy(f.buf, b)
			f.publish(len(b), nil, true)
			return
		}
		var err error
		if body = e.teeReader(id, int64(len(f.buf))); body != nil {
			staged, f.staged = true, true
		} else if body, local, err = e.openSource(id, int64(len(f.buf)), want); err != nil {
			e.flightFailed(id, f, err)
			return
		}
	}
	defer body.Close()
	data, err := f.fill(body)
	if err != nil {
		e.flightFailed(id, f, err)
		return
	}
	want = f.intent(&e.mu) // joiners may have added to it
	if !local {
		e.storeHot(id, data)
		return
	}
	if want.has(wantAsked) {
		e.storeChunk(id, data, want.has(wantKept), true)
		return
	}
	// A chunk read from a tee is on this node's disk already: the fill
	// that owns the tee writes it to the disk tier, after the readers.
	e.placeChunk(id, data, want, !staged)
}

// openSource opens chunk id (n bytes) where it is read from: in a
// cluster, its owners (unless this node
// reads it itself: asked as the owner, or wanted kept),
// the member that wrote it if the origin may not have it yet, and, for a
// chunk this node owns, its former owners' tiers; else the origin. local
// reports that this node owns the chunk (it stores it as such; else it
// keeps a hot copy).
func (e *Engine) openSource(id store.ChunkID, n int64, want intent) (body io.ReadCloser, local bool, err error) {
	mine, ask := true, []cluster.Member(nil)
	keep := want.has(wantKept)
	if !want.has(wantAsked) && !keep {
		mine, ask = e.chunkOwners(id)
	}
	srcs := owners(ask)
	if w, ok := e.pendingWriter(id); ok {
		// Written through w, maybe not at the origin yet.
		srcs = append(srcs, source{m: w})
	}
	if mine && !keep {
		// Owned here but missing: a former owner may hold it.
		for _, h := range e.heirs(id) {
			if !slices.ContainsFunc(srcs, func(s source) bool { return s.m.ID == h.ID }) {
				srcs = append(srcs, source{m: h, cached: true})
			}
		}
	}
	if len(srcs) > 0 {
		return e.peerBody(id, n, srcs), mine, nil
	}
	ctx, watch, cancel := watchStalls(context.Background(), e.opts.FetchTimeout)
	off := id.Index * e.opts.ChunkSize
	rc, _, err := e.origin.Get(ctx, id.Bucket, id.Key, store.ReadRange{Offset: off, Length: n, ETag: id.ETag})
	if err != nil {
		cancel()
		return nil, true, err
	}
	return watch(rc), true, nil
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
// errors only cost a later miss, so they are logged, not returned.
func (e *Engine) storeChunk(id store.ChunkID, data []byte, keep, toDisk bool) {
	if e.opts.RAM != nil {
		e.putTier(e.opts.RAM, "ram", id, data, keep)
	}
	if e.filler != nil && toDisk {
		e.filler.enqueue(id, data, keep)
	}
}

// putTier stores a chunk in t, past its admission policy if keep. A chunk
// too large for the tier, declined by its policy, without room because the
// rest is pinned, or past its bucket's quota, is not an error: it is only
// not cached.
func (e *Engine) putTier(t store.Tier, name string, id store.ChunkID, data []byte, keep bool) {
	var err error
	if a, ok := t.(store.Admitter); ok && keep {
		err = a.PutAlways(id, data)
	} else {
		err = t.Put(id, data)
	}
	if err != nil && !errors.Is(err, store.ErrTooLarge) && !errors.Is(err, store.ErrNotAdmitted) &&
		!errors.Is(err, store.ErrPinnedFull) && !errors.Is(err, store.ErrOverQuota) {
		e.log.Warn().Err(err).Str("bucket", id.Bucket).Str("key", id.Key).Msg(name + " tier put failed")
	}
}
