// Chunk operations of the disk tier: Get (verified), Put (bytes first,
// then the index entry), DeleteObject and Versions.
package disk

import (
	"errors"
	"fmt"
	"hash/crc32"
	"os"

	"github.com/granary-dev/granary/store"
	"github.com/granary-dev/granary/store/index"
)

// Get returns the chunk's bytes after checking their CRC32C. A chunk whose
// bytes are bad, short or missing is dropped and reported as
// store.ErrNotFound, so the caller fetches it again.
func (t *Tier) Get(id store.ChunkID) ([]byte, error) {
	return t.get(id, true, nil)
}

// Peek returns the chunk like Get, but records no access: neither its
// unit's recency nor any frequency changes. The engine peeks when it looks
// again for a chunk a read has already asked for.
func (t *Tier) Peek(id store.ChunkID) ([]byte, error) {
	return t.get(id, false, nil)
}

// GetInto is Get (record) or Peek into a buffer from alloc.
func (t *Tier) GetInto(id store.ChunkID, record bool, alloc func(n int64) []byte) ([]byte, error) {
	return t.get(id, record, alloc)
}

// get reads the chunk, recording the access if access is set, into a
// buffer from alloc (nil: a new one).
func (t *Tier) get(id store.ChunkID, access bool, alloc func(n int64) []byte) ([]byte, error) {
	if err := t.begin(); err != nil {
		return nil, err
	}
	defer t.end()
	if access {
		t.recordGet(id)
	}
	loc, err := t.idx.Lookup(id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, store.ErrNotFound
	case errors.Is(err, index.ErrMalformed):
		// Unusable entry: a miss. The next Put of id overwrites it.
		t.corruptions.Add(1)
		return nil, store.ErrNotFound
	case err != nil:
		return nil, ioErr("index lookup", err)
	}
	u := t.acquire(loc.Unit, access)
	if u == nil {
		// Evicted (its entries are being or will be dropped) or lost.
		return nil, store.ErrNotFound
	}
	data, err := t.readChunk(u, loc, alloc)
	t.release(u)
	if err == nil && crc32.Checksum(data, castagnoli) != loc.CRC {
		err = errors.New("crc32c mismatch")
	}
	if err != nil {
		t.dropCorrupt(id, loc, u, err)
		return nil, store.ErrNotFound
	}
	return data, nil
}

// readChunk reads loc's bytes from u, which the caller holds a reference
// on (so a segment's descriptor stays open even if u is evicted meanwhile),
// into a buffer from alloc (nil: a new one).
func (t *Tier) readChunk(u *unit, loc index.Location, alloc func(n int64) []byte) ([]byte, error) {
	if loc.Length > t.opts.Capacity {
		// No Put stores this much: a damaged entry. Do not allocate it.
		return nil, fmt.Errorf("implausible chunk length %d", loc.Length)
	}
	var buf []byte
	if alloc != nil {
		buf = alloc(loc.Length)
	} else {
		buf = make([]byte, loc.Length)
	}
	if u.kind == index.InSegment {
		if _, err := u.f.ReadAt(buf, loc.Offset); err != nil {
			return nil, err // io.EOF: short read
		}
		return buf, nil
	}
	f, err := os.Open(t.chunkPath(u.id))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.ReadAt(buf, 0); err != nil {
		return nil, err
	}
	return buf, nil
}

// dropCorrupt forgets a chunk whose bytes could not be verified: its entry
// goes (unless re-put elsewhere meanwhile) and so does its unit if it is a
// chunk file; in a segment the bytes become dead space.
func (t *Tier) dropCorrupt(id store.ChunkID, loc index.Location, u *unit, cause error) {
	t.corruptions.Add(1)
	t.log.Warn().Err(cause).Str("bucket", id.Bucket).Str("key", id.Key).
		Str("etag", id.ETag).Int64("index", id.Index).Uint64("unit", loc.Unit).
		Msg("dropping a corrupt chunk")
	removed, err := t.idx.Remove(id, loc)
	if err != nil {
		t.log.Error().Err(err).Msg("dropping a corrupt chunk from the index")
	}
	if loc.Kind == index.InFile {
		t.dropUnit(u)
		return
	}
	t.mu.Lock()
	t.chunkGoneLocked(u)
	if removed {
		// Only the caller that removed the entry uncounts its bytes.
		t.bytesAddedLocked(u, id.Bucket, -loc.Length)
	}
	t.mu.Unlock()
}

// Put stores data under id. The bytes are written (not fsynced) before the
// index entry is committed; see the package comment. Under PolicyTinyLFU a
// Put into a full tier may be declined with store.ErrNotAdmitted (see
// admitsLocked); nothing is then written or evicted. A Put that needs room and
// finds only pinned units to evict fails with store.ErrPinnedFull, also
// having written and evicted nothing. A Put that would take its bucket
// past its quota (Options.Quotas) fails with store.ErrOverQuota before
// any of that, changing nothing (not counted as declined).
func (t *Tier) Put(id store.ChunkID, data []byte) error {
	return t.put(id, data, t.adm != nil)
}

// put is Put, with the admission check if check.
func (t *Tier) put(id store.ChunkID, data []byte, check bool) error {
	if err := t.begin(); err != nil {
		return err
	}
	defer t.end()
	n := int64(len(data))
	if n > t.opts.Capacity {
		return store.ErrTooLarge
	}
	if len(index.ChunkKey(id)) > index.MaxKeyLen {
		return fmt.Errorf("%w: chunk name too long to index", store.ErrInvalidKey)
	}
	done, err := t.admitQuota(id.Bucket, n)
	if err != nil {
		return err
	}
	defer done()
	if loc, err := t.idx.Lookup(id); err == nil && t.isLive(loc.Unit) {
		return nil // chunks are immutable: already held
	}
	var est int64
	if t.adm != nil {
		est = t.adm.estimate(id)
	}
	// A Put follows the Get that missed the chunk, which the estimate
	// counts: the comparison leaves it out (see admission).
	r := reservation{n: n, pinned: t.pinnedAtPut(id), check: check, prior: max(est-1, 0)}
	if t.beforeReserve != nil {
		t.beforeReserve()
	}
	if n < t.opts.SmallMax {
		err = t.putSmall(id, data, est, r)
	} else {
		err = t.putLarge(id, data, est, r)
	}
	if errors.Is(err, store.ErrNotAdmitted) {
		t.declined.Add(1)
	}
	if err != nil {
		return err
	}
	t.afterPut()
	return nil
}

// admitFor returns the index admission check of a new entry in unit u:
// u must still be live (so DropUnits, which runs after detaching, either
// sees the entry or it is never written), and an existing entry is only
// replaced if the unit it names is gone.
func (t *Tier) admitFor(u *unit) func(old *index.Location) bool {
	return func(old *index.Location) bool {
		t.mu.Lock()
		defer t.mu.Unlock()
		if u.detached {
			return false
		}
		return old == nil || t.units[old.Unit] == nil
	}
}

// putSmall appends data to the active segment (the pinned one if
// r.pinned) and indexes it with frequency est.
func (t *Tier) putSmall(id store.ChunkID, data []byte, est int64, r reservation) error {
	n := r.n
	u, off, victims, err := t.reserveSegment(&r)
	t.finishEvictions(victims)
	r.finish()
	if err != nil {
		return err
	}
	defer t.release(u)
	if r.pinned {
		defer t.pinWriteDone(u) // runs before release
	}
	if n > 0 {
		if _, err := u.f.WriteAt(data, off); err != nil {
			return ioErr("write segment", err) // the reservation is dead space
		}
	}
	crc := crc32.Checksum(data, castagnoli)
	loc := index.Location{Kind: index.InSegment, Unit: u.id, Offset: off, Length: n, CRC: crc}
	inserted, err := t.idx.Insert(id, loc, t.admitFor(u))
	if inserted && err == nil {
		t.noteWritten(u, est, id.Bucket, n)
	}
	if err != nil {
		return ioErr("index insert", err)
	}
	return nil
}

// putLarge writes data to a chunk file of its own (temp name, then
// rename) and indexes it with frequency est.
func (t *Tier) putLarge(id store.ChunkID, data []byte, est int64, r reservation) error {
	u, victims, err := t.reserveFile(&r)
	t.finishEvictions(victims)
	r.finish()
	if err != nil {
		return err
	}
	defer t.release(u)
	if r.pinned {
		defer t.pinWriteDone(u)
	}
	if err := t.writeChunkFile(u.id, data); err != nil {
		t.dropUnit(u)
		return err
	}
	crc := crc32.Checksum(data, castagnoli)
	loc := index.Location{Kind: index.InFile, Unit: u.id, Length: int64(len(data)), CRC: crc}
	inserted, err := t.idx.Insert(id, loc, t.admitFor(u))
	if inserted && err == nil { // an error means the entry was not committed
		t.noteWritten(u, est, id.Bucket, loc.Length)
	} else {
		t.dropUnit(u) // a concurrent Put won, or u was evicted already
	}
	if err != nil {
		return ioErr("index insert", err)
	}
	return nil
}

// writeChunkFile publishes data as chunk file id: written to a temp name
// (past the page cache where it can: direct_linux.go) and renamed, so a
// chunk file is never seen half written.
func (t *Tier) writeChunkFile(id uint64, data []byte) error {
	tmp := t.tmpPath(id)
	f, direct, err := t.direct.create(tmp, data)
	if err != nil {
		return ioErr("create chunk file", err)
	}
	err = t.direct.write(f, data, direct)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, t.chunkPath(id))
	}
	if err != nil {
		_ = os.Remove(tmp)
		return ioErr("write chunk file", err)
	}
	return nil
}

// DeleteObject drops every chunk of every version of bucket/key, pinned or
// not (pins protect from eviction, not from invalidation). Chunk
// files are removed at once; chunks in segments leave dead space (and no
// longer count in the segment's admission frequency), which
// is reclaimed when the segment is evicted (no compaction: a segment is a
// small fraction of the capacity, and the ones that only hold dead bytes
// are never read, so they age to the back of the LRU).
func (t *Tier) DeleteObject(bucket, key string) error {
	if err := t.begin(); err != nil {
		return err
	}
	defer t.end()
	locs, err := t.idx.DeleteObject(bucket, key)
	if err != nil {
		return ioErr("index delete", err)
	}
	for _, loc := range locs {
		t.mu.Lock()
		u := t.units[loc.Unit]
		var ok bool
		if loc.Kind == index.InFile {
			ok = u != nil && t.detachLocked(u)
		} else if u != nil {
			t.chunkGoneLocked(u)
			t.bytesAddedLocked(u, bucket, -loc.Length)
		}
		t.mu.Unlock()
		if ok {
			t.release(u)
		}
	}
	return nil
}

// Versions lists the ETags of bucket/key the tier holds chunks of.
func (t *Tier) Versions(bucket, key string) []string {
	if err := t.begin(); err != nil {
		return nil
	}
	defer t.end()
	vs, err := t.idx.Versions(bucket, key)
	if err != nil {
		t.log.Error().Err(err).Msg("listing cached versions")
		return nil
	}
	return vs
}

// Held returns the bytes the tier holds of one object version.
func (t *Tier) Held(bucket, key, etag string) int64 {
	if err := t.begin(); err != nil {
		return 0
	}
	defer t.end()
	n, err := t.idx.Held(bucket, key, etag)
	if err != nil {
		t.log.Error().Err(err).Msg("measuring a cached version")
		return 0
	}
	return n
}
