// The engine as the peer protocol's backend: what it answers a member
// that asked this node as the owner of a chunk or of an object's
// metadata, or told it an object changed.
package gateway

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/granary-dev/granary/cluster/peer"
	"github.com/granary-dev/granary/store"
)

// peerBackend is an Engine answering members.
type peerBackend struct{ e *Engine }

// PeerBackend is the engine as the peer protocol's handler calls it.
func (e *Engine) PeerBackend() peer.Backend { return peerBackend{e} }

// ChunkSize is the size the engine cuts objects into.
func (b peerBackend) ChunkSize() int64 { return b.e.opts.ChunkSize }

// Head answers a member's HEAD for an object whose first chunk this node
// owns: from the metadata cache, else from the origin with the first
// chunk (never asked of another member). With cachedOnly, from the cache
// only (else store.ErrNotFound).
func (b peerBackend) Head(ctx context.Context, bucket, key string, cachedOnly bool) (store.ObjectInfo, error) {
	e := b.e
	if cachedOnly {
		ent, ok := e.meta.get(metaKey(bucket, key))
		if !ok || !e.freshness(bucket).fresh(ent.checked, e.opts.Now()) {
			return store.ObjectInfo{}, fmt.Errorf("gateway: %s/%s: metadata not cached: %w", bucket, key, store.ErrNotFound)
		}
		return ent.info, nil
	}
	info, first, err := e.objectInfo(ctx, bucket, key, wantAsked)
	first.release()
	if err == nil {
		info.Bucket, info.Key = bucket, key
	}
	return info, err
}

// HeadStale answers a member whose origin does not answer with this
// node's cached info of an object, however old.
func (b peerBackend) HeadStale(bucket, key string) (store.ObjectInfo, error) {
	ent, ok := b.e.meta.get(metaKey(bucket, key))
	if !ok {
		return store.ObjectInfo{}, fmt.Errorf("gateway: %s/%s: metadata not cached: %w", bucket, key, store.ErrNotFound)
	}
	info := ent.info
	info.Bucket, info.Key = bucket, key
	return info, nil
}

// Chunk returns a reader of the chunk r names from r.Off on, for a member
// that asked this node as an owner, as its plan has it (forPeer): RAM, a
// copy staged here, the first chunk's metadata load, the disk tier, or a
// flight that reads the origin (never another owner: the asker already
// chose this node). With r.CachedOnly (a new owner asking a former one),
// from the tiers only (forHandoff), else store.ErrNotFound. The reader
// fails if the chunk cannot be had; ctx bounds it.
func (b peerBackend) Chunk(ctx context.Context, r peer.ChunkRequest) (io.Reader, error) {
	e, id := b.e, r.ID
	if err := r.Check(e.opts.ChunkSize); err != nil {
		return nil, err
	}
	p := forPeer
	if r.CachedOnly {
		p = forHandoff
	}
	w := newWalker(p, id, r.Len, wantAsked)
	w.ctx, w.lends = ctx, true // the answer closes the refReader once sent
	got, ok := e.walk(&w)
	switch {
	case !ok: // a hand-off: the tiers do not hold it
		return nil, store.ErrNotFound
	case got.local != nil:
		// Staged on this node (a write-back save not at the origin yet, a
		// tee being filled): read in place, as this node's own clients
		// do, and so a member restoring it holds the uploads back too.
		return got.local(id.Index*e.opts.ChunkSize+r.Off, r.Len-r.Off)
	}
	return &refReader{ctx: ctx, ref: got.ref, off: int(r.Off)}, nil
}

// StoreChunk stores a chunk a member placed on this node as its owner.
func (b peerBackend) StoreChunk(r peer.ChunkRequest, data []byte) error {
	if err := r.Check(b.e.opts.ChunkSize); err != nil {
		return err
	}
	if int64(len(data)) != r.Len {
		return fmt.Errorf("%w: %d bytes for a chunk of %d", peer.ErrBadRequest, len(data), r.Len)
	}
	b.e.storeChunk(r.ID, data, true, true, nil)
	return nil
}

// Forget is a member's word that bucket/key changed through it: drop
// what this node caches of it and, when written is set (see writtenHere),
// learn the new version and that its writer holds it: until the origin
// does (write-back), or until its chunks are on their owners.
//
// The word of an older write arriving after a newer one's (by the
// writers' clocks: LastModified) is ignored: forgets of one key are
// handled one at a time, and one whose version is older than the last
// version a writer told this node of changes nothing. (Versions read from
// the origin are not compared: the origin's clock is another machine's.)
func (b peerBackend) Forget(bucket, key string, written *store.ObjectInfo, writer string) {
	e := b.e
	defer e.peer.forgets.lock(bucket, key)()
	if written != nil {
		if w, ok := e.peer.pending.get(bucket, key); ok && w.modified.After(written.LastModified) {
			return
		}
	}
	e.forgetObject(bucket, key)
	e.catalogChanged(bucket, key, written)
	if written == nil {
		return
	}
	e.peer.pending.put(bucket, key, pendingWrite{etag: written.ETag, writer: writer, modified: written.LastModified, at: time.Now()})
	e.meta.set(metaKey(bucket, key), *written, e.opts.Now())
}

// Pending reports whether a write of bucket/key through this node still
// waits for the origin.
func (b peerBackend) Pending(bucket, key string) bool { return !b.e.Persisted(bucket, key) }

// ForgetAll is a member's word that this node missed more of its changes
// than it could list: drop every object's metadata, every listing and
// every version known to be written elsewhere (the data stays: chunks
// are named by version, and none is served without metadata naming it).
func (b peerBackend) ForgetAll(from string) {
	e := b.e
	e.meta.dropAll()
	e.lists.dropAll()
	e.peer.pending.dropAll()
	e.log.Info().Str("peer", from).Msg("forgot every object's metadata: a member's changes were missed")
}

// refReader reads a chunkRef from off to its end. Close ends its lease
// on bytes a tier lent, if any (not its hold on a flight, which it never
// gives back: the flight's buffer then goes to the collector, not to
// spares).
type refReader struct {
	ctx context.Context
	ref chunkRef
	off int
}

// Close releases the lease on the chunk's bytes: they are not read again.
func (r *refReader) Close() error {
	release(r.ref.lease)
	r.ref.lease, r.ref.data = nil, nil
	return nil
}

// File returns where the rest of the chunk also lies in a file, if a tier
// lent it from one (store.FileSpan), for the kernel to send it from.
func (r *refReader) File() (fd uintptr, off int64, ok bool) {
	return leaseFile(r.ref.lease, int64(r.off))
}

// Bytes returns the rest of the chunk if a tier holds it whole (it may
// then be sent as it is, without a copy; the bytes are immutable).
func (r *refReader) Bytes() ([]byte, bool) {
	if r.ref.fl != nil || r.ref.data == nil {
		return nil, false
	}
	return r.ref.data[r.off:], true
}

func (r *refReader) Read(p []byte) (int, error) {
	b, err := r.ref.bytesAt(r.ctx, r.off)
	if err != nil {
		return 0, err
	}
	n := copy(p, b)
	r.off += n
	return n, nil
}
