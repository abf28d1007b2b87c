// The engine in a cluster: a chunk this node does not own is asked of its
// owners (then the origin), a chunk written or warmed here is placed on its
// owners, and what a write changes is forgotten by every member.
package gateway

import (
	"context"
	"errors"
	"hash/fnv"
	"io"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/granary-dev/granary/cluster"
	"github.com/granary-dev/granary/cluster/peer"
	"github.com/granary-dev/granary/store"
)

// Peers is the cluster as the engine uses it: a *cluster.Node's view and
// the client of the peer protocol (unit tests use in-process fakes).
type Peers interface {
	Self() cluster.Member
	Members() []cluster.Member
	Owners(key []byte, r int) []cluster.Member
	// Heirs are the other live members that may hold key cached from
	// before it was this node's, most likely first (see
	// cluster.Node.Heirs).
	Heirs(key []byte) []cluster.Member
	// Known is the live members and those that died, not left (they are
	// owed the forgets they miss: owed.go).
	Known() []cluster.Member
	Client() PeerClient
}

// PeerClient is the calls the engine makes on other members; a
// *peer.Client is one. Errors match store's sentinels (see peer.Error).
type PeerClient interface {
	// Timeout bounds a call's wait for an answer, and a body's stalls.
	Timeout() time.Duration
	GetChunk(ctx context.Context, to cluster.Member, r peer.ChunkRequest) (io.ReadCloser, error)
	PutChunk(ctx context.Context, to cluster.Member, id store.ChunkID, chunk int64, data []byte) error
	Forget(ctx context.Context, to cluster.Member, bucket, key string, written *store.ObjectInfo) error
	// ForgetAll tells a member to drop every object's metadata and every
	// listing it caches.
	ForgetAll(ctx context.Context, to cluster.Member) error
	// Coverage asks a member which prefixes its catalog lists;
	// ListCached asks it for a page from its catalog alone
	// (store.ErrNotFound if it does not list it).
	Coverage(ctx context.Context, to cluster.Member) ([]peer.Cover, error)
	ListCached(ctx context.Context, to cluster.Member, bucket string, opts store.ListOptions) (store.ListPage, error)
	Head(ctx context.Context, to cluster.Member, bucket, key string, cachedOnly bool) (store.ObjectInfo, error)
	// GetFirst asks the owner of an object's first chunk for its info and
	// that chunk (the body) in one call.
	GetFirst(ctx context.Context, to cluster.Member, bucket, key string, chunk int64) (store.ObjectInfo, io.ReadCloser, error)
	// HeadStale asks a member for an object's info from its metadata
	// cache however old (store.ErrNotFound if it has none).
	HeadStale(ctx context.Context, to cluster.Member, bucket, key string) (store.ObjectInfo, error)
}

// pushSlots bounds the chunk placements on other members in progress.
const pushSlots = 8

// peerState is the engine's cluster plumbing, over the seam Peers: a
// cluster's view, or solo for a node on its own (never nil).
type peerState struct {
	peers   Peers
	solo    bool           // peers is solo: Options.Peers was nil
	slots   chan struct{}  // one per push in progress
	pushes  sync.WaitGroup // pushes and invalidations in the background
	pending pendingSet     // versions written through other members
	owed    owedForgets    // forgets members missed (owed.go)
	forgets keyLocks       // one member's forget of a key at a time
	covers  memberCovers   // what the members' catalogs list (listshare.go)
	loop    sync.WaitGroup // peerLoop, until the engine closes
}

func newPeerState(p Peers) *peerState {
	s := &peerState{peers: p, slots: make(chan struct{}, pushSlots)}
	if p == nil {
		s.peers, s.solo = newSolo(), true
	}
	return s
}

// run starts loop (the engine's peerLoop) on its own goroutine, which
// calls loop.Done when it ends, unless this node is solo: no member is
// owed its forgets or lists a catalog, so a node alone runs no loop.
func (p *peerState) run(loop func()) {
	if p.solo {
		return
	}
	p.loop.Add(1)
	go loop()
}

// keyLocks are striped locks by key.
type keyLocks [64]sync.Mutex

// lock locks bucket/key's stripe and returns its unlock.
func (l *keyLocks) lock(bucket, key string) func() {
	h := fnv.New32a()
	h.Write([]byte(bucket))
	h.Write([]byte{0})
	h.Write([]byte(key))
	m := &l[h.Sum32()%uint32(len(l))]
	m.Lock()
	return m.Unlock
}

// everywhere reports whether every live member keeps chunk id as its
// own (its object lies under an everywhere prefix): the ring's first
// owner reads it from the origin for the cluster and places it on every
// member, for its own clients or a member's ask; a member that misses it
// before then asks that owner and keeps the answer in its own tiers
// (chunks.go).
func (e *Engine) everywhere(id store.ChunkID) bool {
	return e.opts.Everywhere != nil && e.opts.Everywhere(id.Bucket, id.Key)
}

// readCopies is R for chunk id read through: how many owners it is
// placed on (all the live members for an everywhere chunk: Owners caps
// R at the members there are).
func (e *Engine) readCopies(id store.ChunkID) int {
	if e.everywhere(id) {
		return math.MaxInt
	}
	return max(e.opts.Owners, 1)
}

// writeCopies is R for chunk id written through this node: at least 2,
// so a written chunk outlives one node (where the cluster has two).
func (e *Engine) writeCopies(id store.ChunkID) int { return max(e.readCopies(id), 2) }

// chunkOwners says whether this node reads chunk id from the origin
// itself (no cluster, or it is one of the chunk's R owners; the first
// owner alone for an everywhere chunk) and otherwise which owners to
// ask, in order: those R owners and, after them, the next one (who holds
// written chunks, and takes over when the first dies).
func (e *Engine) chunkOwners(id store.ChunkID) (local bool, ask []cluster.Member) {
	r := max(e.opts.Owners, 1)
	if e.everywhere(id) {
		r = 1
	}
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

// Placement is what a client needs to read each chunk from its owner:
// this node, the live members its ring places chunks on (this node alone
// outside a cluster) and the chunk size.
func (e *Engine) Placement() (self cluster.Member, members []cluster.Member, chunk int64) {
	return e.peer.peers.Self(), e.peer.peers.Members(), e.opts.ChunkSize
}

// ownsFirstChunk reports whether this node reads chunk 0 of bucket/key
// from the origin itself (else a metadata miss asks its owner, for the
// info and, when the read wants it, the first chunk: firstFromOwners).
func (e *Engine) ownsFirstChunk(bucket, key string) bool {
	mine, _ := e.chunkOwners(store.ChunkID{Bucket: bucket, Key: key})
	return mine
}

// placeChunk puts a chunk read or written here where it belongs: in this
// node's tiers if it owns it (else a hot copy in the hot tier), and on
// the other owners (written data on writeCopies of them). Pushes run in
// the background, at most pushSlots at once (a full set makes the caller
// wait: backpressure, not unbounded memory). toDisk false leaves this
// node's disk tier to the fill that owns the chunk's local copy. If data
// is flight fl's buffer (else fl is nil), it may become spare where
// nothing keeps it.
func (e *Engine) placeChunk(id store.ChunkID, data []byte, want intent, toDisk bool, fl *flight) {
	keep := want.has(wantKept)
	r := e.readCopies(id)
	if want.has(wantWritten) {
		r = e.writeCopies(id)
	}
	self := e.peer.peers.Self().ID
	mine := false
	for _, m := range e.peer.peers.Owners(cluster.ChunkKey(id.Bucket, id.Key, id.Index), r) {
		if m.ID == self {
			mine = true
			continue
		}
		e.pushChunk(m, id, data)
		fl = nil // the push holds data: never spare
	}
	if mine {
		e.storeChunk(id, data, keep, toDisk, fl)
	} else {
		e.storeHot(id, data, fl)
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

// storeHot keeps a copy of a chunk this node read from its owner for a
// client: in the hot tier in RAM (if any), else queued for the hot
// copies on disk (if any), each as its admission policy decides; never
// in the tiers that hold the chunks this node owns.
//
// A copy RAM keeps is not written to disk as well: while RAM has room
// for copies a hop costs no disk write, and once it has none, the copies
// it declines go to disk. Like an owned chunk a client missed, a disk
// copy is not paced as background work: at a twentieth of a core while
// clients read, most copies of a busy pass were dropped from the full
// queue, and the next pass hopped again.
//
// If data is flight fl's buffer (else fl is nil) and RAM does not keep
// it, the buffer is spare once the disk queue is through with it.
func (e *Engine) storeHot(id store.ChunkID, data []byte, fl *flight) {
	stored, holds := false, false
	if e.opts.Hot != nil {
		stored, holds = e.putTier(e.opts.Hot, "hot", id, data, false)
	}
	if !stored && e.filler != nil && e.opts.HotDisk != nil {
		e.filler.enqueue(fillJob{id: id, data: data, from: fl, tier: e.opts.HotDisk})
	}
	if fl != nil && !holds {
		fl.spare.Store(true)
	}
}

// invalidate forgets bucket/key here and on every other member (an object
// written or deleted through this node), waiting for them up to the peer
// timeout, so a read through any node after the write's answer sees it.
// written, if set, is a new version the origin may not have yet
// (write-back): members learn it, and to read it from this node meanwhile.
func (e *Engine) invalidate(ctx context.Context, bucket, key string, written *store.ObjectInfo) {
	e.forgetObject(bucket, key)
	self := e.peer.peers.Self().ID
	live := make(map[string]bool)
	var wg sync.WaitGroup
	for _, m := range e.peer.peers.Members() {
		live[m.ID] = true
		if m.ID == self {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := e.peer.peers.Client().Forget(context.Background(), m, bucket, key, written); err != nil {
				e.m.peerErrors.WithLabelValues("forget").Inc()
				e.peer.owed.add(m.ID, bucket, key)
				e.logFor(ctx).Warn().Err(err).Str("peer", m.ID).Str("bucket", bucket).Str("key", key).
					Msg("peer did not forget a changed object; it is told again when it answers")
			}
		}()
	}
	for _, m := range e.peer.peers.Known() {
		if !live[m.ID] {
			e.peer.owed.add(m.ID, bucket, key) // dead to this node: told if it comes back
		}
	}
	wg.Wait()
}

// heirs returns the other members that may hold chunk id cached from
// before this node owned it (see Peers.Heirs).
func (e *Engine) heirs(id store.ChunkID) []cluster.Member {
	self := e.peer.peers.Self().ID
	var out []cluster.Member
	for _, m := range e.peer.peers.Heirs(cluster.ChunkKey(id.Bucket, id.Key, id.Index)) {
		if m.ID != self {
			out = append(out, m)
		}
	}
	return out
}

// fromHeir sets *info to an object's info if a member that owned its
// first chunk before this node has it cached (a hand-off never reaches
// the origin), and reports whether one did.
func (e *Engine) fromHeir(ctx context.Context, bucket, key string, info *store.ObjectInfo) bool {
	for _, m := range e.heirs(store.ChunkID{Bucket: bucket, Key: key}) {
		got, err := e.peer.peers.Client().Head(ctx, m, bucket, key, true)
		if err == nil && got.Bucket == bucket && got.Key == key {
			*info = got
			return true
		}
	}
	return false
}

// fromMembersStale sets *info to an object's info from any live member's
// metadata cache, however old, asking the owners of its first chunk
// first: for a node whose origin does not answer and that never saw the
// object (a member that did can serve it as stale-if-error would).
func (e *Engine) fromMembersStale(ctx context.Context, bucket, key string, info *store.ObjectInfo) bool {
	self := e.peer.peers.Self().ID
	_, ask := e.chunkOwners(store.ChunkID{Bucket: bucket, Key: key})
	for _, m := range e.peer.peers.Members() {
		if m.ID != self && !slices.ContainsFunc(ask, func(o cluster.Member) bool { return o.ID == m.ID }) {
			ask = append(ask, m)
		}
	}
	for _, m := range ask {
		got, err := e.peer.peers.Client().HeadStale(ctx, m, bucket, key)
		if err == nil && got.Bucket == bucket && got.Key == key {
			*info = got
			return true
		}
	}
	return false
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
		e.logFor(ctx).Warn().Err(err).Str("peer", m.ID).Str("bucket", bucket).Str("key", key).Msg("owner did not answer a HEAD; trying the next source")
	}
	return e.origin.Stat(ctx, bucket, key)
}

// firstFromOwners loads an object's info and its first chunk from the
// owners of that chunk, one call to the first that answers (a read through
// a member that has neither costs one round trip, not a Head and a
// GetChunk), and hands the chunk to a flight started with want (or joins
// the one in the air). If that owner fails mid-chunk, the flight reads on
// from the next owner, then the origin. An owner that knows no such call
// (an older version) gets headFromOwners' two; no owner answering, the
// origin's Stat, without the chunk.
func (e *Engine) firstFromOwners(ctx context.Context, bucket, key string, want intent) (store.ObjectInfo, *flight, error) {
	_, ask := e.chunkOwners(store.ChunkID{Bucket: bucket, Key: key})
	client := e.peer.peers.Client()
	for i, m := range ask {
		// The body outlives this call (a flight reads it): its context is
		// its own, ended when the flight closes it or it stalls.
		bodyCtx, watch, cancel := watchStalls(context.WithoutCancel(ctx), client.Timeout())
		info, rc, err := client.GetFirst(bodyCtx, m, bucket, key, e.opts.ChunkSize)
		if errors.Is(err, store.ErrNoSuchKey) || errors.Is(err, store.ErrNoSuchBucket) {
			cancel()
			return info, nil, err
		}
		if errors.Is(err, peer.ErrNotSupported) {
			cancel()
			info, err := e.headFromOwners(ctx, bucket, key) // a member of an older version
			return info, nil, err
		}
		if err != nil {
			cancel()
			e.m.peerErrors.WithLabelValues("head").Inc()
			e.logFor(ctx).Warn().Err(err).Str("peer", m.ID).Str("bucket", bucket).Str("key", key).Msg("owner did not answer for an object's first chunk; trying the next source")
			continue
		}
		info.Bucket, info.Key = bucket, key
		if info.Size == 0 || info.ETag == "" {
			rc.Close()
			cancel()
			return info, nil, nil
		}
		id, n := e.chunkID(info, 0), e.chunkLen(info.Size, 0)
		f, started := e.startFlight(id, n, want, false)
		if !started {
			rc.Close()
			cancel()
			return info, f, nil
		}
		e.m.peerReads.Inc()
		body := &failover{e: e, ctx: context.Background(), id: id, n: n, ask: owners(ask), next: i + 1, cur: watch(rc)}
		go e.runFlight(id, f, body, false)
		return info, f, nil
	}
	info, err := e.origin.Stat(ctx, bucket, key)
	return info, nil, err
}

// pendingWriter returns the live member that wrote chunk id's version
// through it, if the origin may not have it yet.
func (e *Engine) pendingWriter(id store.ChunkID) (cluster.Member, bool) {
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
