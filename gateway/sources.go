// The sources of a chunk on this node, as the ladder's rungs ask them
// (ladder.go): the RAM, hot and disk tiers, the local copies read in
// place (a tee, a staged write-back object), and the origin.
package gateway

import (
	"context"
	"io"

	"github.com/granary-dev/granary/store"
)

// tierGet gets id from t, recording the access or only peeking.
func tierGet(t store.Tier, id store.ChunkID, record bool) ([]byte, error) {
	if p, ok := t.(store.Peeker); ok && !record {
		return p.Peek(id)
	}
	return t.Get(id)
}

// tierLend gets id from t like tierGet, lent in place where t lends
// (store.Lender) if lend: the caller releases the lease (nil if none).
func tierLend(t store.Tier, id store.ChunkID, record, lend bool) ([]byte, store.Lease, error) {
	if l, ok := t.(store.Lender); ok && lend {
		return l.Lend(id, record)
	}
	b, err := tierGet(t, id, record)
	return b, nil, err
}

// tierHas reports whether t holds id, counting no read and copying
// nothing.
func tierHas(t store.Tier, id store.ChunkID) bool {
	_, lease, err := tierLend(t, id, false, true)
	release(lease)
	return err == nil
}

// release ends lease, if there is one.
func release(lease store.Lease) {
	if lease != nil {
		lease.Release()
	}
}

// leaseFile returns where the bytes lease holds lie in a file, from off
// within them, if they do (store.FileSpan): the kernel may send them from
// there while the lease is held.
func leaseFile(lease store.Lease, off int64) (fd uintptr, at int64, ok bool) {
	fs, ok := lease.(store.FileSpan)
	if !ok {
		return 0, 0, false
	}
	fd, at = fs.File()
	return fd, at + off, true
}

// lookupRAM returns the chunk if the RAM tier, or the hot tier of copies
// read from owners, holds it; a client's lookup counts a hit. With lend,
// an arena chunk is lent in place: the caller releases the lease.
func (e *Engine) lookupRAM(id store.ChunkID, record, client, lend bool) ([]byte, store.Lease, bool) {
	tier := hitRAM
	var b []byte
	var lease store.Lease
	err := store.ErrNotFound
	if e.opts.RAM != nil {
		b, lease, err = tierLend(e.opts.RAM, id, record, lend)
	}
	if err != nil && e.opts.Hot != nil {
		tier = hitHot
		b, lease, err = tierLend(e.opts.Hot, id, record, lend)
	}
	if err != nil {
		return nil, nil, false
	}
	if record && tier == hitRAM {
		e.noteUnseen(id)
	}
	e.countHit(id.Bucket, tier, len(b), client)
	return b, lease, true
}

// unseenEvery samples the RAM hits reported to the disk tier: one in
// unseenEvery, as that many reads. A report costs the disk tier an index
// lookup, so a warm read pays a 64th of one.
const unseenEvery = 64

// noteUnseen tells the disk tier, sampled, of a read RAM served: without
// it, chunks RAM holds for good (its admission keeps a fixed set through
// epochs) look never read to the disk tier, whose admission then evicts
// their units for chunks read less often (store.ReadNoter).
func (e *Engine) noteUnseen(id store.ChunkID) {
	if e.noter == nil || e.ramHits.Add(1)%unseenEvery != 0 {
		return
	}
	e.noter.NoteReads(id, unseenEvery)
}

// countHit counts a chunk a tier answered, if a client asked for it.
func (e *Engine) countHit(bucket string, tier, n int, client bool) {
	if !client {
		return
	}
	c := e.buckets.of(bucket)
	c.hits.Add(1)
	s := c.hit[tier].Load()
	if s == nil {
		s = e.m.series(bucket, tier)
		c.hit[tier].Store(s)
	}
	s.count.Inc()
	s.bytes.Add(float64(n))
}

// lookupDisk returns the chunk if the disk tier, or the disk's hot copies
// of chunks other members own, holds it, and promotes it (an owned chunk
// to the RAM tier, a copy to the hot tier); a client's lookup counts a
// hit. spare says b is a buffer from spares that no tier kept: its
// holder may give it back (chunkRef.pool).
func (e *Engine) lookupDisk(id store.ChunkID, record, client bool) (b []byte, spare, ok bool) {
	tier, front := hitDisk, e.opts.RAM
	b, spare, ok = e.diskGet(e.opts.Disk, e.intoDisk, id, record)
	if !ok {
		tier, front = hitHotDisk, e.opts.Hot
		b, spare, ok = e.diskGet(e.opts.HotDisk, e.intoHot, id, record)
	}
	if !ok {
		return nil, false, false
	}
	e.countHit(id.Bucket, tier, len(b), client)
	if front != nil {
		// Best effort: a full RAM tier just misses later.
		err := front.Put(id, b)
		spare = spare && (refused(err) || err == nil && putCopies(front, len(b)))
	}
	return b, spare, true
}

// diskGet reads id from the disk tier t (nil: none), into a spare buffer
// if it can (into, else nil), which spare reports.
func (e *Engine) diskGet(t store.Tier, into store.IntoGetter, id store.ChunkID, record bool) (b []byte, spare, ok bool) {
	if t == nil {
		return nil, false, false
	}
	var err error
	if into != nil {
		b, err = into.GetInto(id, record, e.spareFor)
		spare = true
	} else {
		b, err = tierGet(t, id, record)
	}
	return b, spare, err == nil
}

// opener reads n bytes of an object version from offset off.
type opener func(off, n int64) (io.ReadCloser, error)

// localSource returns an opener of chunk id's object version when this
// node holds it on disk outside the tiers: the tee of a write-through
// object being filled, or a write-back object staged in the log; else
// nil. Such a chunk is read in place, or sent from its files
// (objectReader.localSpan, sendLocal).
func (e *Engine) localSource(id store.ChunkID) opener {
	if asm := e.teeSource(id); asm != nil {
		return asm.Open
	}
	if s := e.opts.Staging; s != nil && e.writeMode(id.Bucket) == WriteBack {
		probe, err := s.GetStaged(id.Bucket, id.Key, store.ReadRange{Offset: id.Index * e.opts.ChunkSize, Length: 0, ETag: id.ETag})
		if err != nil {
			return nil // landed at the origin: the tiers and flights serve it
		}
		probe.Close()
		return func(off, n int64) (io.ReadCloser, error) {
			return s.GetStaged(id.Bucket, id.Key, store.ReadRange{Offset: off, Length: n, ETag: id.ETag})
		}
	}
	return nil
}

// teeSource returns the tee of chunk id's object version if the object is
// being filled from one, else nil.
func (e *Engine) teeSource(id store.ChunkID) store.Assembled {
	if e.tees == nil {
		return nil
	}
	return e.tees.source(id)
}

// teeReader returns a reader of a chunk from the tee of its object, if the
// object is being filled from one.
func (e *Engine) teeReader(id store.ChunkID, n int64) io.ReadCloser {
	asm := e.teeSource(id)
	if asm == nil {
		return nil
	}
	rc, err := asm.Open(id.Index*e.opts.ChunkSize, n)
	if err != nil {
		return nil
	}
	return rc
}

// openOrigin opens chunk id (n bytes) at the origin, its body watched for
// stalls of FetchTimeout.
func (e *Engine) openOrigin(id store.ChunkID, n int64) (io.ReadCloser, error) {
	ctx, watch, cancel := watchStalls(context.Background(), e.opts.FetchTimeout)
	off := id.Index * e.opts.ChunkSize
	rc, _, err := e.origin.Get(ctx, id.Bucket, id.Key, store.ReadRange{Offset: off, Length: n, ETag: id.ETag})
	if err != nil {
		cancel()
		return nil, err
	}
	return watch(rc), nil
}
