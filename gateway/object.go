// Object operations: metadata through the cache, reads through the chunk
// tiers, writes through to the origin.
package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/granary-dev/granary/internal/growstack"
	"github.com/granary-dev/granary/store"
)

// Head returns an object's info, from the cache while it is fresh.
func (e *Engine) Head(ctx context.Context, bucket, key string) (store.ObjectInfo, error) {
	info, _, err := e.objectInfo(ctx, bucket, key, wantNoChunk)
	return info, err
}

// HeadFresh returns an object's info as the origin has it now, whatever
// the bucket's freshness rule, and refreshes the cache with it. It serves
// conditions that must hold at the origin (those of a server-side copy).
func (e *Engine) HeadFresh(ctx context.Context, bucket, key string) (store.ObjectInfo, error) {
	l, err := e.loadInfo(ctx, bucket, key, wantNoChunk)
	return l.info, err
}

// Get opens an object (or the range of it opts ask for).
func (e *Engine) Get(ctx context.Context, bucket, key string, opts GetOptions) (*Object, error) {
	e.clientGet()
	first := wantNoChunk
	if wantsFirstChunk(opts.Range, e.opts.ChunkSize) {
		first = wantNow
	}
	info, fl, err := e.objectInfo(ctx, bucket, key, first)
	if err != nil {
		return nil, err
	}
	if opts.Check != nil {
		if err := opts.Check(info); err != nil {
			fl.release()
			return nil, err
		}
	}
	off, n := int64(0), info.Size
	if opts.Range != nil {
		if off, n, err = opts.Range.Resolve(info.Size); err != nil {
			fl.release()
			return nil, err
		}
	}
	obj := &Object{Info: info, Offset: off, Length: n}
	if n == 0 {
		fl.release()
		obj.whole = []byte{}
		obj.ReadCloser = &obj.mem
		return obj, nil
	}
	// Fast path: a range inside one chunk that RAM holds is a sub-slice
	// (the read's plan, forGet, pauses after RAM). Not for chunk 0 when
	// the metadata load brought its flight: this read was counted a miss,
	// and reads the flight (even one already landed in RAM; looking it up
	// there would count a hit as well).
	idx := off / e.opts.ChunkSize
	single := (off+n-1)/e.opts.ChunkSize == idx
	var w walker // the fast path's walk: the reader goes on from what it asked
	if single && (fl.fl == nil || idx != 0) {
		w = newWalker(forGet, e.chunkID(info, idx), e.chunkLen(info.Size, idx), wantNow)
		w.lends = true // the object's Close releases the lease
		within := off - idx*e.opts.ChunkSize
		if got, ok := e.walk(&w); ok {
			fl.release()
			obj.whole = got.ref.data[within : within+n]
			obj.mem.data, obj.mem.lease = obj.whole, got.ref.lease
			obj.within = within
			obj.ReadCloser = &obj.mem
			return obj, nil
		}
		if f := e.diskFile(&w, within, n, opts.FileFrom); f != nil {
			fl.release()
			obj.file, obj.ReadCloser = f, f
			return obj, nil
		}
	}
	r := e.newReader(ctx, info, off, n)
	if single {
		r.askedIdx, r.asked = idx, w.asked
	}
	if off < e.opts.ChunkSize {
		r.first = fl // the metadata load's first chunk: read it, never again
	} else {
		fl.release()
	}
	if err := r.admit(!single); err != nil {
		r.refuse()
		return nil, err
	}
	e.reading.Add(1)
	obj.ReadCloser = r
	return obj, nil
}

// wantsFirstChunk reports whether a read of r needs the object's first
// chunk, in which case a metadata miss fetches it in the same origin call.
// A suffix range (a footer read) most likely does not: it gets a Stat.
func wantsFirstChunk(r *Range, chunkSize int64) bool {
	return r == nil || (r.Suffix == 0 && r.Start < chunkSize)
}

// loaded is a metadata load's result: the info and, if the load fetched
// the first chunk in the same origin call, its flight (every caller
// joins it, so the chunk is read from the origin once even when the tiers
// decline to keep it).
type loaded struct {
	info  store.ObjectInfo
	first *firstChunk
}

// objectInfo returns the info of bucket/key: cached while fresh, else loaded
// once for all concurrent callers. A load that is not wantNoChunk fetches the
// first chunk in the same origin call (with that intent) when no tier holds the
// object, and returns its flight.
//
// Past its freshness, a cached entry is served at once and revalidated in
// the background (a ttl bucket's reads, which must not wait on the
// origin); otherwise the caller waits for the load at most OriginTimeout
// and then gets the stale entry or, under NoStale, ErrUnavailable. A
// warm-up (wantKept) always waits: it must see the origin's version.
func (e *Engine) objectInfo(ctx context.Context, bucket, key string, first intent) (store.ObjectInfo, chunkRef, error) {
	f := e.freshness(bucket)
	ent, had := e.meta.lookup(bucket, key)
	if had && f.fresh(ent.checked, e.opts.Now()) {
		e.m.metaHits.Inc()
		return ent.info, chunkRef{}, nil
	}
	if had && f.revalidatesInBackground() && !first.has(wantKept) {
		e.m.metaHits.Inc()
		e.revalidateInfo(bucket, key)
		return ent.info, chunkRef{}, nil
	}
	e.m.metaMisses.Inc()
	ch := e.sf.DoChan(metaKey(bucket, key), func() (any, error) {
		growstack.Grow() // a fresh goroutine, about to go deep (origin, index)
		ctx, cancel := e.detached(ctx)
		defer cancel()
		return e.loadInfo(ctx, bucket, key, first)
	})
	var late <-chan time.Time // fires when a stale entry's wait is over
	if had && !first.has(wantKept) {
		t := time.NewTimer(e.opts.OriginTimeout)
		defer t.Stop()
		late = t.C
	}
	select {
	case res := <-ch:
		if res.Err != nil {
			return store.ObjectInfo{}, chunkRef{}, res.Err
		}
		l := res.Val.(loaded)
		if first == wantNoChunk {
			return l.info, chunkRef{}, nil // the chunk is for a caller that wants it
		}
		return l.info, l.first.take(), nil
	case <-late:
		// The load goes on in the background and updates the cache.
		if f.NoStale {
			return store.ObjectInfo{}, chunkRef{}, fmt.Errorf("%w: no answer within %v to revalidate %s/%s",
				store.ErrUnavailable, e.opts.OriginTimeout, bucket, key)
		}
		e.m.staleServed.Inc()
		return ent.info, chunkRef{}, nil
	case <-ctx.Done():
		return store.ObjectInfo{}, chunkRef{}, ctx.Err()
	}
}

// loadInfo asks the origin for bucket/key's info: a revalidation when a
// stale entry exists, else a first fetch.
func (e *Engine) loadInfo(ctx context.Context, bucket, key string, first intent) (loaded, error) {
	k := metaKey(bucket, key)
	seq := e.meta.sequence(k)
	stale, had := e.meta.get(k)
	owns := first.has(wantAsked) || e.ownsFirstChunk(bucket, key)
	chunk := !had && first != wantNoChunk && !e.holdsVersions(bucket, key)
	info, fl, err := e.askMeta(ctx, bucket, key, first, metaPlan(had, owns, chunk))
	noStale := e.freshness(bucket).NoStale
	switch {
	case had && unavailable(err) && !noStale:
		// Serve what we had rather than fail (stale-if-error), and trust
		// it for another TTL so an outage costs one probe per TTL. The
		// outage itself is logged once, by the origin's guard.
		e.m.staleServed.Inc()
		e.logFor(ctx).Debug().Err(err).Str("bucket", bucket).Str("key", key).Msg("origin unavailable; serving stale metadata")
		e.meta.putIf(seq, k, stale.info, e.opts.Now())
		return loaded{info: stale.info}, nil
	case unavailable(err) && !noStale:
		if info, ok := e.catalogInfo(ctx, bucket, key); ok {
			e.m.staleServed.Inc()
			e.meta.putIf(seq, k, info, e.opts.Now())
			return loaded{info: info}, nil
		}
		if e.fromMembersStale(ctx, bucket, key, &info) {
			e.m.staleServed.Inc()
			e.meta.putIf(seq, k, info, e.opts.Now())
			return loaded{info: info}, nil
		}
		return loaded{}, err
	case errors.Is(err, store.ErrNoSuchKey):
		if had {
			e.forgetObject(bucket, key)
		}
		return loaded{info: info}, err
	case err != nil:
		return loaded{info: info}, err
	}
	if had && stale.info.ETag != info.ETag {
		e.forgetData(bucket, key) // the old version's chunks are dead
	}
	e.meta.putIf(seq, k, info, e.opts.Now())
	var fc *firstChunk
	if fl != nil {
		fc = &firstChunk{fl: fl}
	}
	return loaded{info: info, first: fc}, nil
}

// unavailable reports whether err means the origin could not answer in
// time. The context of a load is the engine's own, so its deadline is the
// origin's slowness, not a client's impatience.
func unavailable(err error) bool {
	return errors.Is(err, store.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded)
}

// holdsVersions reports whether a tier holds chunks of some version of the
// object, in which case a metadata miss is a plain Stat (the data is local).
func (e *Engine) holdsVersions(bucket, key string) bool {
	for _, t := range []store.Tier{e.opts.RAM, e.opts.Disk} {
		if vl, ok := t.(store.VersionLister); ok && len(vl.Versions(bucket, key)) > 0 {
			return true
		}
	}
	return false
}

// fetchWithFirstChunk reads the object's info and first chunk in one origin
// call (a cold small object costs one round trip, not two) and hands the
// body to a flight. Origins that refuse the range (an empty object, say)
// get a plain Stat instead. The flight returned (nil if none) is the first
// chunk's, started with want or joined.
//
// A reader's first chunk (wantNow) is charged to the working memory until
// its flight retires. The charge is the chunk's length, known once the
// origin has answered (charging ChunkSize up front would let a handful of
// small reads fill the budget and send the rest round twice). With no
// room for it the body is dropped unread and the info comes alone: the
// reader then waits for room as for any chunk.
func (e *Engine) fetchWithFirstChunk(ctx context.Context, bucket, key string, want intent) (store.ObjectInfo, *flight, error) {
	// The body outlives this call (a flight reads it), so it gets a context
	// of its own, ended when the flight closes the body or the body stalls.
	bodyCtx, watch, cancel := watchStalls(context.WithoutCancel(ctx), e.opts.FetchTimeout)
	rc, info, err := e.origin.Get(bodyCtx, bucket, key, store.ReadRange{Offset: 0, Length: e.opts.ChunkSize})
	if err != nil {
		cancel()
	} else {
		rc = watch(rc)
	}
	switch {
	case errors.Is(err, store.ErrNoSuchKey), errors.Is(err, store.ErrNoSuchBucket),
		errors.Is(err, store.ErrUnavailable), errors.Is(err, store.ErrAccessDenied):
		return info, nil, err
	case err != nil:
		// Not a missing object: perhaps one the first chunk's range does
		// not fit (an empty one, 416), which a HEAD describes.
		info, serr := e.origin.Stat(ctx, bucket, key)
		var refused *store.OriginError
		if serr != nil && errors.As(err, &refused) && errors.As(serr, &refused) {
			serr = err // refused both times: the GET's answer names the code, a HEAD's has no body
		}
		return info, nil, serr
	}
	if info.Size == 0 {
		rc.Close()
		return info, nil, nil
	}
	id, n := e.chunkID(info, 0), e.chunkLen(info.Size, 0)
	paid := want == wantNow
	if paid && !e.mem.tryTake(n) {
		rc.Close()
		return info, nil, nil
	}
	f, started := e.startFlight(id, n, want, paid)
	switch {
	case !started:
		rc.Close()
		if paid {
			e.mem.give(n)
		}
		return info, f, nil
	case paid:
		e.hand(f, n)
	}
	go e.runFlight(id, f, rc, true)
	return info, f, nil
}

// Put writes an object through to the origin and returns once the origin
// has accepted it. An object of one chunk or less is kept for the cache on
// the way through (within PutCacheBytes); a larger one is copied to the
// tee and fills the cache from there once the origin has it. Either way
// the first read is a hit.
func (e *Engine) Put(ctx context.Context, bucket, key string, body io.Reader, size int64, meta store.ObjectMeta) (store.ObjectInfo, error) {
	if err := e.writable(bucket); err != nil {
		return store.ObjectInfo{}, err
	}
	defer e.writeStarted()()
	end := e.writes.begin(metaKey(bucket, key))
	defer end()
	var keep *bytes.Buffer
	if size > 0 && size <= e.opts.ChunkSize && e.reservePutBytes(size) {
		defer e.putBytes.Add(-size)
		keep = bytes.NewBuffer(make([]byte, 0, size))
		body = io.TeeReader(body, keep)
	}
	body, teed, teeing := e.teePut(bucket, key, body, size, meta)
	info, err := e.origin.Put(ctx, bucket, key, body, size, meta)
	if err != nil {
		e.invalidate(ctx, bucket, key, nil)
		teed(info, err)
		return info, err
	}
	info.Bucket, info.Key = bucket, key
	e.invalidate(ctx, bucket, key, e.writtenHere(info, teeing))
	teed(info, nil)
	e.recordWrite(info)
	e.rememberWrite(info, end())
	if keep != nil && int64(keep.Len()) == size && info.ETag != "" {
		e.placeChunk(store.ChunkID{Bucket: bucket, Key: key, ETag: info.ETag}, keep.Bytes(), wantWrite, true, nil)
	}
	e.fillWriteBack(info)
	return info, nil
}

// reservePutBytes takes n bytes of the PUT cache budget, if there are.
func (e *Engine) reservePutBytes(n int64) bool {
	if e.opts.PutCacheBytes < 0 {
		return false
	}
	if e.putBytes.Add(n) > e.opts.PutCacheBytes {
		e.putBytes.Add(-n)
		return false
	}
	return true
}

// ErrCopyUnsupported means the origin cannot copy objects server-side.
var ErrCopyUnsupported = errors.New("gateway: origin cannot copy objects")

// Copy copies an object at the origin. A nil meta keeps the source's.
func (e *Engine) Copy(ctx context.Context, srcBucket, srcKey, dstBucket, dstKey string, meta *store.ObjectMeta) (store.ObjectInfo, error) {
	if err := e.writable(dstBucket); err != nil {
		return store.ObjectInfo{}, err
	}
	if _, ok := e.opts.Origin.(store.Copier); !ok {
		return store.ObjectInfo{}, ErrCopyUnsupported
	}
	info, err := e.origin.(countingOrigin).Copy(ctx, srcBucket, srcKey, dstBucket, dstKey, meta)
	e.invalidate(ctx, dstBucket, dstKey, nil)
	if err == nil {
		info.Bucket, info.Key = dstBucket, dstKey
		e.recordWrite(info)
	}
	return info, err
}

// Delete removes an object at the origin and from the cache.
func (e *Engine) Delete(ctx context.Context, bucket, key string) error {
	if err := e.writable(bucket); err != nil {
		return err
	}
	err := e.origin.Delete(ctx, bucket, key)
	e.invalidate(ctx, bucket, key, nil)
	if err == nil {
		e.recordDelete(bucket, key)
	}
	return err
}
