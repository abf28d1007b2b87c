// The source ladder: the places a chunk is looked for, in order, for
// every reason this node reads one (plans), and the one walker that tries
// them (walk). S3 GETs, a member's chunk request, warm-ups, fills and the
// flights themselves all walk a plan from here; a new source is one rung
// and one case of walk. The sources themselves live in sources.go.
package gateway

import (
	"context"
	"io"
	"slices"

	"github.com/granary-dev/granary/cluster"
	"github.com/granary-dev/granary/store"
)

// rung is one place the ladder looks for a chunk.
type rung uint8

const (
	// rungFirst is chunk 0's flight that the reader's metadata load
	// brought (fetchWithFirstChunk). It comes before RAM: the load
	// counted this read a miss, so a RAM hit would count it twice.
	rungFirst rung = iota
	// rungRAM is the RAM tier, then the hot tier of copies read from
	// owners.
	rungRAM
	// rungPause hands the walk back to its caller, which resumes it:
	// there a reader pays the working memory for the chunk (budget.go),
	// a warm-up yields to writes.
	rungPause
	// rungLocal is a copy on this node's disk outside the tiers (the tee
	// of a write-through object being filled, a write-back object staged
	// in the log), read in place (localSource).
	rungLocal
	// rungLoad joins the object's metadata load, which may bring chunk 0
	// with it (a member asking for the first chunk of an object it just
	// asked this node's HEAD of): never read it twice.
	rungLoad
	// rungTiers is RAM (and hot), then the disk tier, which promotes a
	// hit to RAM. A RAM hit of another length ends the look (no disk).
	rungTiers
	// rungFlight joins the chunk's flight, or starts one that walks
	// flightPlan. It ends every plan that must yield the chunk.
	rungFlight
	// rungTee is the tee of a write-through object being filled, read
	// into a flight (it stays on disk: the tee's fill queues the chunk).
	rungTee
	// rungOwners are the chunk's owners, when this node is not one.
	rungOwners
	// rungPending is the member that wrote the chunk's version, while
	// the origin may not have it yet.
	rungPending
	// rungHeirs are the chunk's former owners, when this node owns it
	// (what they hold, never a fill).
	rungHeirs
	// rungOrigin is the origin: after the members the rungs above
	// gathered, in order, if any (a failover), else alone.
	rungOrigin
)

var rungNames = [...]string{rungFirst: "first", rungRAM: "ram", rungPause: "|", rungLocal: "local",
	rungLoad: "load", rungTiers: "tiers", rungFlight: "flight", rungTee: "tee", rungOwners: "owners",
	rungPending: "pending", rungHeirs: "heirs", rungOrigin: "origin"}

func (r rung) String() string { return rungNames[r] }

// purpose is why this node reads a chunk: each has its plan.
type purpose uint8

const (
	forGet     purpose = iota // an S3 GET or ranged read: Engine.Get's fast path and objectReader
	forRetry                  // a reader looking a chunk up again (objectReader.refetch)
	forPeer                   // a member asking this node as the chunk's owner (peerBackend.Chunk)
	forHandoff                // a new owner asking this former one what it holds (CachedOnly)
	forWarm                   // a warm-up (WarmObject)
	forFill                   // a fill of an object written through this node (fillFrom)
)

// plan is the ordered rungs a purpose walks. records says a walk's first
// ask of each tier is recorded as an access (the tiers' admission policy
// counts them); otherwise every ask only peeks. client says the walk
// reads for a client (a GET, its retry, a member's read for one): only
// those count as hits in the hit rate (Engine.Lookups, the metrics); a
// warm-up, a fill or a hand-off finding a chunk serves nobody.
type plan struct {
	rungs   []rung
	records bool
	client  bool
}

// plans are the ladders of the requests. Where they differ: a reader
// takes its metadata load's chunk 0 before anything and pays between RAM
// and the rest; a member asking the owner looks in RAM before a local
// copy and joins a metadata load in progress for chunk 0 (its asker did
// the HEAD); a hand-off reads the tiers only; a warm-up looks in the
// tiers before yielding to writes and again after; a retry or a fill
// only peeks.
var plans = [...]plan{
	forGet:     {rungs: []rung{rungFirst, rungRAM, rungPause, rungLocal, rungTiers, rungFlight}, records: true, client: true},
	forRetry:   {rungs: []rung{rungTiers, rungFlight}, client: true},
	forPeer:    {rungs: []rung{rungRAM, rungLocal, rungLoad, rungTiers, rungFlight}, records: true, client: true},
	forHandoff: {rungs: []rung{rungTiers}},
	forWarm:    {rungs: []rung{rungTiers, rungPause, rungTiers, rungFlight}},
	forFill:    {rungs: []rung{rungTiers, rungFlight}},
}

// The plans of a flight, by its intent: the tiers again (a flight that
// raced another's store), the tee, then where the bytes are read from.
// A chunk wanted kept (a warm-up, a fill) is read by this node itself:
// never from owners or heirs; one asked of this node as its owner is
// never asked of other owners.
var (
	readFlight  = plan{rungs: []rung{rungTiers, rungTee, rungOwners, rungPending, rungHeirs, rungOrigin}}
	askedFlight = plan{rungs: []rung{rungTiers, rungTee, rungPending, rungHeirs, rungOrigin}}
	keptFlight  = plan{rungs: []rung{rungTiers, rungTee, rungPending, rungOrigin}}
)

// flightPlan is the plan of a flight that wants its chunk for want.
func flightPlan(want intent) *plan {
	switch {
	case want.has(wantKept):
		return &keptFlight
	case want.has(wantAsked):
		return &askedFlight
	}
	return &readFlight
}

// asked is the tiers a walk asked for its chunk already: one read of a
// chunk is recorded once by each tier it asks, however often it looks
// (the Get fast path, the reader's window, a flight's second look).
type asked uint8

const (
	askedRAM asked = 1 << iota
	askedDisk
)

// walker is one walk down a plan for one chunk: at is the next rung.
type walker struct {
	plan  *plan
	at    int
	asked asked
	id    store.ChunkID
	n     int64  // the chunk's length: a tier's copy of another is a miss
	want  intent // a flight started is started with it
	paid  bool   // the caller paid the working memory (startFlight)
	// inline says the caller waits for the whole chunk before it sends
	// a byte: a flight the walk starts runs on the caller's goroutine
	// (a relayed 100 KiB chunk spent a goroutine, its stack growth and
	// a wake-up on the hand-off).
	inline bool
	// lends says the caller releases what it is given (chunkRef.release):
	// a chunk RAM holds in its arena is lent in place, not copied.
	lends bool
	first chunkRef        // the metadata load's chunk 0 (rungFirst)
	ctx   context.Context // bounds rungLoad
	// A flight's walk gathers members to read from, in order; mine says
	// this node owns the chunk (it stores it as such, else a hot copy).
	members []source
	mine    bool
}

// newWalker starts a walk of p's plan for n bytes of chunk id.
func newWalker(p purpose, id store.ChunkID, n int64, want intent) walker {
	return walker{plan: &plans[p], id: id, n: n, want: want}
}

// flightWalker starts the walk of a flight that wants n bytes of chunk id
// for want. This node owns the chunk until its owners rung says not.
func flightWalker(id store.ChunkID, n int64, want intent) walker {
	return walker{plan: flightPlan(want), id: id, n: n, want: want, mine: true}
}

// pause is where a walk paused: the rest of a walker that goes on later,
// elsewhere (see objectReader.resolve).
type pause struct {
	at     int
	asked  asked
	want   intent
	paid   bool
	inline bool
	lends  bool
}

// paused is w at its pause.
func (w *walker) paused() pause {
	return pause{at: w.at, asked: w.asked, want: w.want, paid: w.paid, inline: w.inline, lends: w.lends}
}

// walker is the walk of p's plan for n bytes of chunk id, going on from
// pause p.
func (p pause) walker(pur purpose, id store.ChunkID, n int64) walker {
	w := newWalker(pur, id, n, p.want)
	w.at, w.asked, w.paid, w.inline, w.lends = p.at, p.asked, p.paid, p.inline, p.lends
	return w
}

// found is where a walk found its chunk: from is the rung; ref is the
// chunk in memory or arriving, local a copy read in place (rungLocal),
// body the bytes a flight reads (rungTee, rungOrigin), or err why the
// origin could not be opened.
type found struct {
	from  rung
	ref   chunkRef
	local opener
	body  io.ReadCloser
	err   error
}

// walk tries w's rungs from w.at on, in order, and reports the first that
// has the chunk; false at a pause (walk again to go on) or the plan's end.
func (e *Engine) walk(w *walker) (got found, ok bool) {
	for w.at < len(w.plan.rungs) {
		r := w.plan.rungs[w.at]
		w.at++
		if r == rungPause {
			return got, false
		}
		if e.try(w, r, &got) {
			got.from = r
			return got, true
		}
	}
	return got, false
}

// try asks one rung for w's chunk, and sets *got if it has it.
func (e *Engine) try(w *walker, r rung, got *found) bool {
	switch r {
	case rungFirst:
		if w.first.fl != nil && w.id.Index == 0 {
			got.ref, w.first = w.first, chunkRef{}
			return true
		}
	case rungRAM:
		b, lease, ok := e.lookupRAM(w.id, w.record(askedRAM), w.plan.client, w.lends)
		if ok && int64(len(b)) == w.n {
			got.ref = chunkRef{data: b, free: true, lease: lease}
			return true
		}
		release(lease)
	case rungLocal:
		got.local = e.localSource(w.id)
		return got.local != nil
	case rungLoad:
		return e.tryLoad(w, got)
	case rungTiers:
		return e.tryTiers(w, got)
	case rungFlight:
		f, started := e.startFlight(w.id, w.n, w.want, w.paid)
		got.ref = chunkRef{fl: f, free: !started, held: true}
		switch {
		case started && w.inline:
			e.runFlight(w.id, f, nil, false)
		case started:
			go e.runFlight(w.id, f, nil, false)
		}
		return true
	case rungTee:
		got.body = e.teeReader(w.id, w.n)
		return got.body != nil
	default:
		return e.tryMembers(w, r, got)
	}
	return false
}

// record reports whether w's ask of tier t is recorded as an access (its
// first, in a plan that records), and marks t asked.
func (w *walker) record(t asked) bool {
	rec := w.plan.records && w.asked&t == 0
	w.asked |= t
	return rec
}

// tryTiers looks in RAM (and hot), then on disk.
func (e *Engine) tryTiers(w *walker, got *found) bool {
	recRAM, recDisk := w.record(askedRAM), w.record(askedDisk)
	b, lease, ram := e.lookupRAM(w.id, recRAM, w.plan.client, w.lends)
	ok, spare := ram, false
	if !ok {
		b, spare, ok = e.lookupDisk(w.id, recDisk, w.plan.client)
	}
	if !ok || int64(len(b)) != w.n {
		release(lease)
		return false
	}
	got.ref = chunkRef{data: b, free: ram, lease: lease}
	if spare {
		got.ref.pool = &e.spares
	}
	return true
}

// tryLoad joins the object's metadata load for its first chunk.
func (e *Engine) tryLoad(w *walker, got *found) bool {
	if w.id.Index != 0 {
		return false
	}
	info, first, err := e.objectInfo(w.ctx, w.id.Bucket, w.id.Key, wantAsked)
	if err != nil || info.ETag != w.id.ETag || first.fl == nil {
		first.release()
		return false
	}
	got.ref = first
	return true
}

// tryMembers is a flight's rungs past the tee: the members to read the
// chunk from are gathered, in order, and the origin rung opens them (a
// failover ending at the origin) or the origin alone.
func (e *Engine) tryMembers(w *walker, r rung, got *found) bool {
	switch r {
	case rungOwners:
		var ask []cluster.Member
		w.mine, ask = e.chunkOwners(w.id)
		w.members = append(w.members, owners(ask)...)
	case rungPending:
		if m, ok := e.pendingWriter(w.id); ok {
			// Written through m, maybe not at the origin yet.
			w.members = append(w.members, source{m: m})
		}
	case rungHeirs:
		if !w.mine {
			break
		}
		// Owned here but missing: a former owner may hold it.
		for _, h := range e.heirs(w.id) {
			if !slices.ContainsFunc(w.members, func(s source) bool { return s.m.ID == h.ID }) {
				w.members = append(w.members, source{m: h, cached: true})
			}
		}
	case rungOrigin:
		if len(w.members) > 0 {
			got.body = e.peerBody(w.id, w.n, w.members)
		} else {
			got.body, got.err = e.openOrigin(w.id, w.n)
		}
		return true
	}
	return false
}
