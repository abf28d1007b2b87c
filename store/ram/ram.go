// Package ram is the in-memory cache tier: a hard byte budget over
// immutable chunks, sharded for low lock contention on the warm path, with
// eviction behind a small policy seam (LRU) and, by default, a TinyLFU
// admission filter in front of it (admission.go).
package ram

import (
	"bytes"
	"errors"
	"hash/maphash"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/granary-dev/granary/store"
)

// ErrClosed is returned by every operation on a closed tier.
var ErrClosed = errors.New("ram: tier closed")

// EntryOverhead is charged against the budget for every chunk on top of its
// bytes and the lengths of its bucket, key and ETag: it covers the entry
// struct, its map slot and its list links.
const EntryOverhead = 200

// shardCount is the number of independently locked shards (a power of 2).
const shardCount = 16

// Options configure a RAM tier.
type Options struct {
	// Capacity is the byte budget: the sum over held chunks of
	// len(data) + EntryOverhead + the lengths of the ID's strings never
	// exceeds it. Zero or negative makes a tier that holds nothing (every
	// Put fails with store.ErrTooLarge).
	Capacity int64
	// Policy is PolicyTinyLFU (the default when empty) or PolicyLRU; see
	// ParsePolicy, which also accepts other spellings of them. New panics
	// on any other value, so validate configuration with ParsePolicy.
	Policy string
	// Pins says which objects are pinned: their chunks are never evicted
	// (see pin.go). Nil pins nothing.
	Pins store.PinSet
	// Shared, if set, is a budget this tier shares with another (see
	// shared.go): the tier holds at most Capacity and the two together
	// at most Shared's total. Yields says this tier's chunks give way to
	// the other's. A Shared has at most one tier that yields.
	Shared *Shared
	Yields bool
	// Quotas caps the chunk bytes each bucket may hold in the tier: a Put
	// or PutAlways that would take a bucket past its quota fails with
	// store.ErrOverQuota (see quota.go). Nil sets no quotas.
	Quotas store.Quotas
	// Sendable keeps chunks of ArenaMin to ArenaMax bytes in memory
	// files the kernel can send from (arena.go); Lend lends them with a
	// store.FileSpan. Where the kernel cannot give one, the tier keeps
	// them on the heap and Sendable reports why.
	Sendable bool
}

// Tier is an in-memory store.Tier. It is safe for concurrent use.
//
// Locking: mu serialises budget decisions (every Put holds it while it
// evicts and inserts), so the check "used + size <= capacity" and the
// insert cannot interleave with another Put. Each shard's mutex guards that
// shard's maps and policy. Lock order: mu, then one shard at a time. Get
// and DeleteObject take only a shard lock; used only ever grows under mu,
// which is why UsedBytes never exceeds the capacity, even transiently.
// Admission (Put deciding whether to evict at all) also runs under mu. The
// frequency sketches lock themselves and are leaves: taken under mu or
// under nothing (Get counts after its shard lock is released), never
// together with a shard lock. Pins.Pinned and Pins.Generation are called
// under mu and sometimes a shard lock (the PinSet contract allows it).
// Quotas.Quota is called under no lock; bytes locks itself and is a leaf
// (quota.go). With a Shared budget, Put takes Shared.mu before mu, and a
// tier that does not yield takes the yielding tier's mu (to shed its
// chunks) under its own: Shared.mu, then the owner's mu, then the
// yielder's (shared.go).
type Tier struct {
	capacity int64
	seed     maphash.Seed
	epoch    time.Time
	adm      *admission   // nil under PolicyLRU
	pins     store.PinSet // nil: nothing pinned
	quotas   store.Quotas // nil: no quotas
	shared   *Shared      // nil: the tier's budget is its own
	yields   bool         // with shared: this tier gives way

	mu      sync.Mutex
	shards  [shardCount]shard
	scratch []victimInfo // guarded by mu: reused by victims
	judged  uint64       // guarded by mu: pin generation of every aside list (pin.go)

	used      atomic.Int64 // charged bytes of held chunks
	chunks    atomic.Int64
	evictions atomic.Int64
	declined  atomic.Int64
	closed    atomic.Bool

	bytes bucketBytes // chunk data bytes per bucket (quota.go)

	arena    *arenaSet // nil: every chunk on the heap
	arenaErr error     // why Options.Sendable got no arena
}

var (
	_ store.Tier          = (*Tier)(nil)
	_ store.VersionLister = (*Tier)(nil)
	_ store.Admitter      = (*Tier)(nil)
	_ store.AdmitChecker  = (*Tier)(nil)
	_ store.Holder        = (*Tier)(nil)
	_ store.Peeker        = (*Tier)(nil)
	_ store.BucketSizer   = (*Tier)(nil)
	_ store.Lender        = (*Tier)(nil)
	_ store.PutCopier     = (*Tier)(nil)
	_ store.FileSpan      = (*slot)(nil)
)

// shard holds the chunks of the objects that hash to it: all chunks of one
// bucket/key live in the same shard, so DeleteObject and Versions touch
// one shard.
type shard struct {
	mu      sync.Mutex
	entries map[store.ChunkID]*entry
	objects map[objectKey]*entry // head of each object's chain of chunks
	policy  policy
	aside   *lru     // chunks of pinned objects, out of the policy (pin.go)
	_       [64]byte // keep hot mutexes of neighbouring shards off one cache line
}

// objectKey names an object; as a struct it is an unambiguous map key.
type objectKey struct{ bucket, key string }

// entry is one held chunk. All fields but id, data, slot, size and hash
// (immutable after insertion) are guarded by the shard's mutex. data is
// the slot's bytes when the chunk is in the arena: read them under the
// shard's mutex or a lease only.
type entry struct {
	id   store.ChunkID
	data []byte
	slot *slot  // nil: data is on the heap
	size int64  // bytes charged against the budget
	hash uint64 // chunkHash of id: its key in the admission sketch

	// aside: the entry is in the shard's aside list, not in its policy
	// (pin.go). Get reads it: it sits by the fields Get touches anyway.
	aside      bool
	stamp      int64  // last access (ns since epoch), set by the policy
	prev, next *entry // policy links, or the aside list's when aside

	objPrev, objNext *entry // chain of the object's chunks

	// freeGen is 1 + the pin generation under which the entry was last
	// found unpinned (0: never); written under Tier.mu too (pin.go).
	freeGen uint64
}

// New returns an empty RAM tier. It panics if opts.Policy is not a name
// ParsePolicy accepts.
func New(opts Options) *Tier {
	pol, err := ParsePolicy(opts.Policy)
	if err != nil {
		panic(err)
	}
	t := &Tier{capacity: max(opts.Capacity, 0), seed: maphash.MakeSeed(), epoch: time.Now(), pins: opts.Pins, quotas: opts.Quotas,
		shared: opts.Shared, yields: opts.Yields && opts.Shared != nil}
	if t.yields {
		t.shared.yielder = t
	}
	if t.pins != nil {
		t.judged = t.pins.Generation() // nothing is aside yet
	}
	if pol == PolicyTinyLFU {
		t.adm = newAdmission(t.capacity)
	}
	if opts.Sendable {
		t.arena, t.arenaErr = newArenaSet(t.capacity)
	}
	for i := range t.shards {
		t.shards[i].reset()
	}
	return t
}

// reset empties the shard.
func (s *shard) reset() {
	s.entries = make(map[store.ChunkID]*entry)
	s.objects = make(map[objectKey]*entry)
	s.policy = newLRU()
	s.aside = newLRU()
}

// objectHash hashes bucket/key with the tier's seed.
func (t *Tier) objectHash(bucket, key string) uint64 {
	return maphash.String(t.seed, key) ^ maphash.String(t.seed, bucket)*0x9e3779b97f4a7c15
}

// shardAt returns the shard of the object whose objectHash is oh.
func (t *Tier) shardAt(oh uint64) *shard { return &t.shards[oh&(shardCount-1)] }

// shardFor returns the shard holding the chunks of bucket/key.
func (t *Tier) shardFor(bucket, key string) *shard { return t.shardAt(t.objectHash(bucket, key)) }

// chunkHash hashes id, whose object hashes to oh, for the admission
// sketch: every field counts, the result is well mixed in all bits (the
// sketch stripe uses the top ones) and never 0 (0 is an empty miss mark).
func (t *Tier) chunkHash(oh uint64, id store.ChunkID) uint64 {
	h := oh ^ maphash.String(t.seed, id.ETag)*0xbf58476d1ce4e5b9 ^ uint64(id.Index)*0x94d049bb133111eb
	h ^= h >> 30 // splitmix64 finaliser
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return max(h, 1)
}

// now is the policy clock: monotonic nanoseconds since the tier started.
func (t *Tier) now() int64 { return int64(time.Since(t.epoch)) }

// heapCost is what a chunk of n bytes on the heap costs against the
// budget.
func heapCost(id store.ChunkID, n int) int64 {
	return int64(n) + EntryOverhead + int64(len(id.Bucket)+len(id.Key)+len(id.ETag))
}

// cost is what a chunk costs the tier: an arena chunk's bytes count in
// whole pages (the pages it is written to).
func (t *Tier) cost(id store.ChunkID, n int) int64 {
	c := heapCost(id, n)
	if t.arenaHolds(n) {
		return c + (pageSize-int64(n)%pageSize)%pageSize
	}
	return c
}

// arenaHolds reports whether a chunk of n bytes goes to the arena.
func (t *Tier) arenaHolds(n int) bool { return t.arena != nil && n >= ArenaMin && n <= ArenaMax }

// PutCopies reports whether a Put of n bytes keeps a copy (store.PutCopier):
// an arena chunk's, in its slot or, where the arena has no slot for it,
// on the heap.
func (t *Tier) PutCopies(n int) bool { return t.arenaHolds(n) }

// Sendable reports why Options.Sendable got the tier no arena; nil if it
// has one, or was not asked for one.
func (t *Tier) Sendable() error { return t.arenaErr }

// Leases is how many leases Lend gave that are not released yet.
func (t *Tier) Leases() int64 {
	if t.arena == nil {
		return 0
	}
	return t.arena.lent()
}

// lent returns an entry's bytes to a caller outside the shard lock, who
// has no lease: an arena chunk's are copied, under a lease taken by the
// caller (lend) under the lock.
func lent(data []byte, sl *slot) []byte {
	if sl == nil {
		return data
	}
	defer sl.Release()
	return append([]byte(nil), data...)
}

// Get returns the stored slice itself (no copy) of a heap chunk, a copy
// of an arena chunk (Lend lends those); callers must not modify it. Under
// PolicyTinyLFU every Get, hit or miss, counts as an access of the chunk
// (see admission).
func (t *Tier) Get(id store.ChunkID) ([]byte, error) {
	b, sl, err := t.lend(id, true)
	return lent(b, sl), err
}

// Lend returns the chunk like Get (record) or Peek, without a copy: an
// arena chunk's bytes stay valid, and in their memory file (the lease is
// a store.FileSpan), until the caller releases the lease. A heap chunk's
// lease is nil.
func (t *Tier) Lend(id store.ChunkID, record bool) ([]byte, store.Lease, error) {
	b, sl, err := t.lend(id, record)
	if sl == nil {
		return b, nil, err // no typed nil in the interface
	}
	return b, sl, err
}

// lend is Lend with the lease as it is.
func (t *Tier) lend(id store.ChunkID, record bool) ([]byte, *slot, error) {
	if !record {
		return t.peek(id)
	}
	if t.closed.Load() {
		return nil, nil, ErrClosed
	}
	now := t.now()
	oh := t.objectHash(id.Bucket, id.Key)
	s := t.shardAt(oh)
	s.mu.Lock()
	e := s.entries[id]
	if e == nil {
		s.mu.Unlock()
		if t.adm != nil {
			t.adm.accessed(t.chunkHash(oh, id), true)
		}
		return nil, nil, store.ErrNotFound
	}
	if !e.aside { // an aside (pinned) chunk stays aside: pin.go
		s.policy.hit(e, now)
	}
	data, sl, h := e.data, e.slot, e.hash
	if sl != nil {
		sl.lend()
	}
	s.mu.Unlock()
	if t.adm != nil {
		t.adm.accessed(h, false)
	}
	return data, sl, nil
}

// Peek returns the chunk like Get (a heap chunk's slice, an arena
// chunk's copy), but records no access: neither its
// recency nor its frequency changes. The engine peeks when it looks again
// for a chunk a read has already asked for.
func (t *Tier) Peek(id store.ChunkID) ([]byte, error) {
	b, sl, err := t.peek(id)
	return lent(b, sl), err
}

// peek is Peek with a lease on an arena chunk.
func (t *Tier) peek(id store.ChunkID) ([]byte, *slot, error) {
	if t.closed.Load() {
		return nil, nil, ErrClosed
	}
	s := t.shardAt(t.objectHash(id.Bucket, id.Key))
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.entries[id]; e != nil {
		if e.slot != nil {
			e.slot.lend()
		}
		return e.data, e.slot, nil
	}
	return nil, nil, store.ErrNotFound
}

// Put stores data under id if it fits, evicting the policy's victims first
// if the budget requires. A present id is left as is. Under PolicyTinyLFU,
// a Put that would have to evict is declined with store.ErrNotAdmitted,
// evicting nothing, unless the chunk has been asked for more often lately
// than every chunk it would evict.
func (t *Tier) Put(id store.ChunkID, data []byte) error {
	return t.put(id, data, t.adm != nil)
}

// PutAlways stores data under id like Put, past the admission policy:
// for chunks just written, or asked for by a warm-up.
func (t *Tier) PutAlways(id store.ChunkID, data []byte) error {
	return t.put(id, data, false)
}

// put is Put, with the admission filter if filter. It fails with
// store.ErrOverQuota, before admission and eviction and changing nothing
// (not even a miss mark), if the chunk would take its bucket past its
// quota, whether or not the tier holds the chunk already. It fails with
// store.ErrPinnedFull, evicting nothing, if the chunks it could evict are
// all pinned (a pin added while it evicts can still stop it half way).
func (t *Tier) put(id store.ChunkID, data []byte, filter bool) error {
	size := t.cost(id, len(data))
	if size > t.capacity {
		return store.ErrTooLarge
	}
	q := t.quota(id.Bucket) // the only Quota call of this Put
	if data == nil {
		data = []byte{}
	}
	oh := t.objectHash(id.Bucket, id.Key)
	s, h := t.shardAt(oh), t.chunkHash(oh, id)
	// An arena chunk is copied into its slot before the locks where it
	// will most likely be kept (the tier has room: no admission to pass),
	// so a fill's copies do not queue every other Put behind them; a
	// slot the Put does not use is emptied again.
	var sl *slot
	if t.arenaHolds(len(data)) && t.fits(size) && !t.closed.Load() {
		sl = t.arena.place(data)
	}
	defer func() {
		if sl != nil {
			sl.drop()
		}
	}()
	defer t.lockShared()()
	t.mu.Lock()
	defer t.mu.Unlock()
	// Close takes mu, so this check holds until we return.
	if t.closed.Load() {
		return ErrClosed
	}
	if t.overQuota(id.Bucket, q, int64(len(data))) {
		return store.ErrOverQuota
	}
	// Any Put consumes the miss mark, so it discounts one later Put at most.
	missed := t.adm != nil && t.adm.takeMiss(h)
	s.mu.Lock()
	_, present := s.entries[id]
	s.mu.Unlock()
	if present {
		return nil
	}
	if need := max(t.used.Load()+size-t.capacity, t.overShared(size)); need > 0 {
		if err := t.makeRoom(need, size, h, missed, filter); err != nil {
			return err
		}
	}
	e := &entry{id: id, data: data, size: size, hash: h}
	if t.arenaHolds(len(data)) {
		if sl == nil {
			sl = t.arena.place(data)
		}
		if e.slot, sl = sl, nil; e.slot != nil {
			e.data = e.slot.bytes()
		} else {
			e.data = bytes.Clone(data) // PutCopies: the caller's buffer is its own
		}
	}
	now := t.now()
	s.mu.Lock()
	s.insert(e, now)
	t.charge(size)
	t.chunks.Add(1)
	t.bytes.add(id.Bucket, int64(len(data)))
	s.mu.Unlock()
	return nil
}

// makeRoom evicts until a chunk charged size bytes fits, need bytes at
// first (concurrent deletes may lower that). If filter, the chunk (hash h,
// missed as takeMiss said) must first beat every victim (beats). Pinned
// chunks are never victims: if the evictable ones cannot free need
// bytes, makeRoom fails with store.ErrPinnedFull before evicting any.
// Caller holds t.mu.
func (t *Tier) makeRoom(need, size int64, h uint64, missed, filter bool) error {
	gen := t.judgePins()
	// Pins first, so that a full-of-pinned tier says so whatever the
	// candidate's frequency.
	if t.pins != nil && !t.canFree(need, gen) {
		return store.ErrPinnedFull
	}
	if filter {
		cand := t.candidate(h, missed)
		if cand <= 0 || !t.beats(cand, t.victims(need, gen)) {
			t.declined.Add(1)
			return store.ErrNotAdmitted
		}
	}
	for !t.fits(size) {
		if !t.evictOne(gen) {
			if t.pins != nil {
				return store.ErrPinnedFull // a pin added since the walk
			}
			// Unreachable while used matches the entries; refuse rather
			// than overrun the budget if it ever does not.
			return store.ErrTooLarge
		}
	}
	return nil
}

// evictOne evicts the lowest-ranked evictable victim over all shards
// (gen as for shard.victim). It reports false if no shard holds an
// evictable chunk. Caller holds t.mu.
func (t *Tier) evictOne(gen uint64) bool {
	var best *shard
	bestRank := int64(math.MaxInt64)
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		e, rank := s.policy.victim()
		if e != nil && t.pins != nil && e.freeGen != gen+1 {
			// Not yet judged under gen: the same test as s.victim's, which
			// is not inlined; this scan is most of an evicting Put.
			e, rank = s.victim(t, gen)
		}
		if e != nil && (best == nil || rank < bestRank) {
			best, bestRank = s, rank
		}
		s.mu.Unlock()
	}
	if best == nil {
		return false
	}
	// The victim may have changed since the scan (a hit or a delete); the
	// shard's current victim is as good a choice. If the shard emptied
	// (or holds only pinned chunks now), the caller's loop re-checks the
	// budget and scans again.
	best.mu.Lock()
	if e, _ := best.victim(t, gen); e != nil {
		best.remove(e)
		e.left()
		t.charge(-e.size)
		t.chunks.Add(-1)
		t.bytes.add(e.id.Bucket, -int64(len(e.data)))
		t.evictions.Add(1)
	}
	best.mu.Unlock()
	return true
}

// insert adds e to the shard's maps and policy. Caller holds s.mu.
func (s *shard) insert(e *entry, now int64) {
	s.entries[e.id] = e
	k := objectKey{e.id.Bucket, e.id.Key}
	if head := s.objects[k]; head != nil {
		e.objNext, head.objPrev = head, e
	}
	s.objects[k] = e
	s.policy.added(e, now)
}

// remove drops e from the shard's maps and policy (or aside list).
// Caller holds s.mu.
func (s *shard) remove(e *entry) {
	delete(s.entries, e.id)
	k := objectKey{e.id.Bucket, e.id.Key}
	if e.objPrev != nil {
		e.objPrev.objNext = e.objNext
	} else if e.objNext != nil {
		s.objects[k] = e.objNext
	} else {
		delete(s.objects, k)
	}
	if e.objNext != nil {
		e.objNext.objPrev = e.objPrev
	}
	e.objPrev, e.objNext = nil, nil
	if e.aside {
		s.aside.removed(e)
		e.aside = false
	} else {
		s.policy.removed(e)
	}
}

// left is the entry out of the tier: its slot empties once no lease
// holds it.
func (e *entry) left() {
	if e.slot != nil {
		e.slot.drop()
	}
}

// DeleteObject drops every chunk of every version of bucket/key.
func (t *Tier) DeleteObject(bucket, key string) error {
	if t.closed.Load() {
		return ErrClosed
	}
	s := t.shardFor(bucket, key)
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64 // data bytes dropped: one count update for the object
	for e := s.objects[objectKey{bucket, key}]; e != nil; {
		next := e.objNext
		s.remove(e)
		e.left()
		t.charge(-e.size)
		t.chunks.Add(-1)
		n += int64(len(e.data))
		e = next
	}
	t.bytes.add(bucket, -n)
	return nil
}

// Versions lists, sorted, the ETags of bucket/key the tier holds chunks of.
func (t *Tier) Versions(bucket, key string) []string {
	if t.closed.Load() {
		return nil
	}
	s := t.shardFor(bucket, key)
	var vs []string
	s.mu.Lock()
	for e := s.objects[objectKey{bucket, key}]; e != nil; e = e.objNext {
		if !slices.Contains(vs, e.id.ETag) {
			vs = append(vs, e.id.ETag)
		}
	}
	s.mu.Unlock()
	slices.Sort(vs)
	return vs
}

// Held returns the bytes of the version etag of bucket/key the tier holds.
func (t *Tier) Held(bucket, key, etag string) int64 {
	if t.closed.Load() {
		return 0
	}
	s := t.shardFor(bucket, key)
	var n int64
	s.mu.Lock()
	for e := s.objects[objectKey{bucket, key}]; e != nil; e = e.objNext {
		if e.id.ETag == etag {
			n += int64(len(e.data))
		}
	}
	s.mu.Unlock()
	return n
}

// Stats reports usage. UsedBytes includes the per-entry overhead.
func (t *Tier) Stats() store.TierStats {
	return store.TierStats{
		UsedBytes:     t.used.Load(),
		CapacityBytes: t.capacityNow(),
		Chunks:        t.chunks.Load(),
		Evictions:     t.evictions.Load(),
		Declined:      t.declined.Load(),
		FileBytes:     t.fileBytes(),
	}
}

// Close drops every chunk; later operations fail with ErrClosed. Closing
// twice is harmless.
func (t *Tier) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed.Swap(true) {
		return nil
	}
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		for _, e := range s.entries {
			e.left()
		}
		s.reset()
		s.mu.Unlock()
	}
	if t.arena != nil {
		t.arena.close()
	}
	if d := t.used.Swap(0); t.shared != nil {
		t.shared.used.Add(-d)
	}
	t.chunks.Store(0)
	t.bytes.reset()
	return nil
}
