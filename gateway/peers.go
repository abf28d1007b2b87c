// The engine in a cluster: a chunk this node does not own is asked of its
// owners (then the origin), a chunk written or warmed here is placed on its
// owners, and what a write changes is forgotten by every member.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/granary-dev/granary/cluster"
	"github.com/granary-dev/granary/store"
)

// Peers is the cluster as the engine uses it; *cluster.Node is one.
type Peers interface {
	Self() cluster.Member
	Members() []cluster.Member
	Owners(key []byte, r int) []cluster.Member
	// Heir is who owns key when this node is left out: who held it
	// before this node joined (see cluster.Node.Heir).
	Heir(key []byte) (cluster.Member, bool)
	Client() *cluster.Client
}

// pushSlots bounds the chunk placements on other members in progress.
const pushSlots = 8

// peerState is the engine's cluster plumbing (nil-safe when there are no
// peers).
type peerState struct {
	peers   Peers
	slots   chan struct{}  // one per push in progress
	pushes  sync.WaitGroup // pushes and invalidations in the background
	pending pendingSet     // versions written through other members
}

func newPeerState(p Peers) *peerState {
	if p == nil {
		return nil
	}
	return &peerState{peers: p, slots: make(chan struct{}, pushSlots)}
}

// readCopies is R for data read through: how many owners a chunk has.
func (e *Engine) readCopies() int { return max(e.opts.Replicas, 1) }

// writeCopies is R for data written through this node: at least 2, so
// a written chunk outlives one node (where the cluster has two).
func (e *Engine) writeCopies() int { return max(e.opts.Replicas, 2) }

// chunkOwners says whether this node reads chunk id from the origin
// itself (no cluster, or it is one of the chunk's R owners) and
// otherwise which owners to ask, in order: the R owners and, after them,
// the next one (who holds written chunks, and takes over when the first
// dies).
func (e *Engine) chunkOwners(id store.ChunkID) (local bool, ask []cluster.Member) {
	if e.peer == nil {
		return true, nil
	}
	r := e.readCopies()
	self := e.peer.peers.Self().ID
	for i, m := range e.peer.peers.Owners(cluster.ChunkKey(id.Bucket, id.Key, id.Index), max(r, 2)) {
		if m.ID == self {
			if i < r {
				return true, nil
			}
			continue
		}
		ask = append(ask, m)
	}
	return len(ask) == 0, ask
}

// ownsFirstChunk reports whether this node reads chunk 0 of bucket/key
// from the origin itself (else a metadata miss is a plain Stat, and the
// first chunk comes from its owner).
func (e *Engine) ownsFirstChunk(bucket, key string) bool {
	mine, _ := e.chunkOwners(store.ChunkID{Bucket: bucket, Key: key})
	return mine
}

// placeChunk puts a chunk read or written here where it belongs: in this
// node's tiers if it owns it (else a hot copy in the hot tier), and on
// the other owners (written data on writeCopies of them). Pushes run in
// the background, at most pushSlots at once (a full set makes the caller
// wait: backpressure, not unbounded memory). toDisk false leaves this
// node's disk tier to the fill that owns the chunk's local copy.
func (e *Engine) placeChunk(id store.ChunkID, data []byte, keep, written, toDisk bool) {
	if e.peer == nil {
		e.storeChunk(id, data, keep, toDisk)
		return
	}
	r := e.readCopies()
	if written {
		r = e.writeCopies()
	}
	self := e.peer.peers.Self().ID
	mine := false
	for _, m := range e.peer.peers.Owners(cluster.ChunkKey(id.Bucket, id.Key, id.Index), r) {
		if m.ID == self {
			mine = true
			continue
		}
		e.pushChunk(m, id, data)
	}
	if mine {
		e.storeChunk(id, data, keep, toDisk)
	} else {
		e.storeHot(id, data)
	}
}

// pushChunk sends a chunk to owner m in the background.
func (e *Engine) pushChunk(m cluster.Member, id store.ChunkID, data []byte) {
	e.peer.slots <- struct{}{}
	e.peer.pushes.Add(1)
	go func() {
		defer e.peer.pushes.Done()
		defer func() { <-e.peer.slots }()
		err := e.peer.peers.Client().PutChunk(context.Background(), m, id, e.opts.ChunkSize, data)
		if err != nil {
			e.m.peerErrors.WithLabelValues("put").Inc()
			e.log.Warn().Err(err).Str("peer", m.ID).Str("bucket", id.Bucket).Str("key", id.Key).
				Int64("chunk", id.Index).Msg("placing a chunk on its owner failed")
		}
	}()
}

// storeHot keeps a copy of a chunk this node served for an owner, in the
// bounded hot tier (if any): never on disk, never in the RAM tier that
// holds the chunks this node owns.
func (e *Engine) storeHot(id store.ChunkID, data []byte) {
	if e.opts.Hot != nil {
		e.putTier(e.opts.Hot, "hot", id, data, false)
	}
}

// invalidate forgets bucket/key here and on every other member (an object
// written or deleted through this node), waiting for them up to the peer
// timeout, so a read through any node after the write's answer sees it.
// written, if set, is a new version the origin may not have yet
// (write-back): members learn it, and to read it from this node meanwhile.
func (e *Engine) invalidate(bucket, key string, written *store.ObjectInfo) {
	e.forgetObject(bucket, key)
	if e.peer == nil {
		return
	}
	self := e.peer.peers.Self().ID
	var wg sync.WaitGroup
	for _, m := range e.peer.peers.Members() {
		if m.ID == self {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := e.peer.peers.Client().Forget(context.Background(), m, bucket, key, written); err != nil {
				e.m.peerErrors.WithLabelValues("forget").Inc()
				e.log.Warn().Err(err).Str("peer", m.ID).Str("bucket", bucket).Str("key", key).
					Msg("peer did not forget a changed object; it may serve the old version until its metadata expires")
			}
		}()
	}
	wg.Wait()
}

// heir returns the member that held chunk id before this node owned it,
// if that is another node (see Peers.Heir).
func (e *Engine) heir(id store.ChunkID) (cluster.Member, bool) {
	if e.peer == nil {
		return cluster.Member{}, false
	}
	m, ok := e.peer.peers.Heir(cluster.ChunkKey(id.Bucket, id.Key, id.Index))
	return m, ok && m.ID != e.peer.peers.Self().ID
}

// fromHeir sets *info to an object's info if the member that owned its
// first chunk before this node has it cached (a hand-off never reaches
// the origin), and reports whether it did.
func (e *Engine) fromHeir(ctx context.Context, bucket, key string, info *store.ObjectInfo) bool {
	m, ok := e.heir(store.ChunkID{Bucket: bucket, Key: key})
	if !ok {
		return false
	}
	got, err := e.peer.peers.Client().Head(ctx, m, bucket, key, true)
	if err != nil || got.Bucket != bucket || got.Key != key {
		return false
	}
	*info = got
	return true
}

// headFromOwners loads an object's info from the owners of its first
// chunk (the owner reads the origin once for the whole cluster, with the
// first chunk), else from the origin.
func (e *Engine) headFromOwners(ctx context.Context, bucket, key string) (store.ObjectInfo, error) {
	_, ask := e.chunkOwners(store.ChunkID{Bucket: bucket, Key: key})
	for _, m := range ask {
		info, err := e.peer.peers.Client().Head(ctx, m, bucket, key, false)
		if err == nil || errors.Is(err, store.ErrNoSuchKey) || errors.Is(err, store.ErrNoSuchBucket) {
			return info, err
		}
		e.m.peerErrors.WithLabelValues("head").Inc()
		e.log.Warn().Err(err).Str("peer", m.ID).Str("bucket", bucket).Str("key", key).Msg("owner did not answer a HEAD; trying the next source")
	}
	return e.origin.Stat(ctx, bucket, key)
}

// PeerHead answers a member's HEAD for an object whose first chunk this
// node owns: from the metadata cache, else from the origin with the first
// chunk (never asked of another member). With cachedOnly, from the cache
// only (else store.ErrNoSuchKey).
func (e *Engine) PeerHead(ctx context.Context, bucket, key string, cachedOnly bool) (store.ObjectInfo, error) {
	if cachedOnly {
		ent, ok := e.meta.get(metaKey(bucket, key))
		if !ok || !e.freshness(bucket).fresh(ent.checked, time.Now()) {
			return store.ObjectInfo{}, fmt.Errorf("gateway: %s/%s: not cached: %w", bucket, key, store.ErrNoSuchKey)
		}
		return ent.info, nil
	}
	info, _, err := e.objectInfo(ctx, bucket, key, fetchPeer)
	if err == nil {
		info.Bucket, info.Key = bucket, key
	}
	return info, err
}

// pendingWriter returns the live member that wrote chunk id's version
// through it, if the origin may not have it yet.
func (e *Engine) pendingWriter(id store.ChunkID) (cluster.Member, bool) {
	if e.peer == nil {
		return cluster.Member{}, false
	}
	w, ok := e.peer.pending.writer(id)
	if !ok || w == e.peer.peers.Self().ID {
		return cluster.Member{}, false
	}
	for _, m := range e.peer.peers.Members() {
		if m.ID == w {
			return m, true
		}
	}
	return cluster.Member{}, false
}

// PeerChunk returns a reader of chunk id (n bytes long, objects cut into
// chunk-byte chunks) from byte off on, for a peer that asked this node as
// an owner: from the tiers, or a flight that reads the origin (never
// another peer: the asker already chose this node). With cachedOnly (a new
// owner asking a former one), from the tiers only, else store.ErrNotFound.
// The reader fails if the chunk cannot be had; ctx bounds it.
func (e *Engine) PeerChunk(ctx context.Context, id store.ChunkID, n, chunk, off int64, cachedOnly bool) (io.Reader, error) {
	if chunk != e.opts.ChunkSize {
		return nil, errors.New("gateway: peer uses another chunk size")
	}
	if n <= 0 || n > chunk || off < 0 || off > n || id.Index < 0 || id.ETag == "" {
		return nil, errors.New("gateway: bad chunk request")
	}
	if cachedOnly {
		b, ok := e.lookupLen(id, n, lookNone)
		if !ok {
			return nil, store.ErrNotFound
		}
		return &refReader{ctx: ctx, ref: chunkRef{data: b}, off: int(off)}, nil
	}
	if id.Index == 0 {
		// The first chunk may be on its way with the object's metadata
		// (fetchWithFirstChunk registers its flight only once the origin
		// answered): join that load rather than read the chunk twice.
		info, first, err := e.objectInfo(ctx, id.Bucket, id.Key, fetchPeer)
		if err == nil && info.ETag == id.ETag && first != nil {
			return &refReader{ctx: ctx, ref: chunkRef{fl: first}, off: int(off)}, nil
		}
	}
	info := store.ObjectInfo{Bucket: id.Bucket, Key: id.Key, ETag: id.ETag, Size: id.Index*chunk + n}
	ref := e.chunk(info, id.Index, fetchPeer, lookAll)
	return &refReader{ctx: ctx, ref: ref, off: int(off)}, nil
}

// StorePeerChunk stores a chunk a peer placed on this node as its owner.
func (e *Engine) StorePeerChunk(id store.ChunkID, chunk int64, data []byte) error {
	if chunk != e.opts.ChunkSize {
		return errors.New("gateway: peer uses another chunk size")
	}
	if len(data) == 0 || int64(len(data)) > chunk || id.ETag == "" || id.Index < 0 {
		return errors.New("gateway: bad chunk")
	}
	e.storeChunk(id, data, true, true)
	return nil
}

// refReader reads a chunkRef from off to its end.
type refReader struct {
	ctx context.Context
	ref chunkRef
	off int
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
