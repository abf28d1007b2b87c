// A Node is this process's view of the cluster: the live members, the
// ring over them (rebuilt on every change), the peer client, and the
// write-back copies kept for other nodes (uploaded when their primary
// dies).
package cluster

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/granary-dev/granary/store"
)

// takeOverEvery is how often a node retries uploading copies of
// primaries that are not members (a failed takeover, or copies left from
// before this process started).
const takeOverEvery = 10 * time.Second

// reconcileEvery is how often a node asks live primaries about the copies
// it has kept for them longer than reconcileAfter (a primary that
// restarted with an empty disk before it was seen dead holds none of its
// writes any more: its copies are uploaded here).
const (
	reconcileEvery = time.Minute
	reconcileAfter = time.Minute
)

// NodeOptions configure a Node.
type NodeOptions struct {
	Self       Member
	Membership Membership
	Client     Caller
	// Copies, if set, are the write-back copies this node keeps for
	// other members.
	Copies store.Copies
	Logger zerolog.Logger
}

// A hand-off looks for a chunk this node owns but lacks where it was
// before: the owner when this node is left out of the ring (who held it
// before this node joined, or while it was away), then the owner when
// that one is left out too, and so on, handOffDepth members deep, so a
// chunk that moved owner more than once (nodes joining one after
// another) is still found where it was cached. Past the first, heirs are
// only named for handOffFor after a change of this node's view: by then
// what moved has been read from its new owners.
const (
	handOffDepth = 3
	handOffFor   = time.Hour
	// maxExclusionRings bounds the rings a view builds for heirs.
	maxExclusionRings = 256
)

// view is one consistent snapshot: members and their ring.
type view struct {
	members []Member
	byID    map[string]Member
	ring    *Ring
	// without is the ring of the other members: who owns a key when
	// this node is left out, which is who held it before it joined.
	without *Ring
	since   time.Time // when this view replaced the last one

	mu    sync.Mutex       // guards rings
	rings map[string]*Ring // rings without this node and more, by the sorted IDs left out
}

// ringWithout returns the ring of v's members but those in out (sorted),
// built once per view; false once maxExclusionRings are built and this
// one is not among them (a lookup never builds a ring of its own).
func (v *view) ringWithout(out []string) (*Ring, bool) {
	k := strings.Join(out, "\x00")
	v.mu.Lock()
	defer v.mu.Unlock()
	if r, ok := v.rings[k]; ok {
		return r, true
	}
	if len(v.rings) >= maxExclusionRings {
		return nil, false
	}
	var ids []string
	for _, m := range v.members {
		if !slices.Contains(out, m.ID) {
			ids = append(ids, m.ID)
		}
	}
	r, err := NewRing(ids) // IDs of members: never empty names
	if err != nil {
		return nil, false
	}
	v.rings[k] = r
	return r, true
}

// Node is the cluster as this node sees it. Safe for concurrent use.
type Node struct {
	opts NodeOptions
	log  zerolog.Logger
	cur  atomic.Pointer[view]

	taking     atomic.Bool    // a takeOver is running
	reconciled time.Time      // when live primaries were last asked (takeOver's only)
	wg         sync.WaitGroup // follow and takeOver goroutines

	stop chan struct{}
	once sync.Once
}

// NewNode builds the first view and follows membership changes until
// Close.
func NewNode(opts NodeOptions) (*Node, error) {
	n := &Node{opts: opts, log: opts.Logger, stop: make(chan struct{})}
	if err := n.rebuild(); err != nil {
		return nil, err
	}
	n.wg.Add(1)
	go n.follow()
	return n, nil
}

// rebuild makes the view of the current members.
func (n *Node) rebuild() error {
	ms := n.opts.Membership.Members()
	ids := make([]string, len(ms))
	byID := make(map[string]Member, len(ms))
	for i, m := range ms {
		ids[i] = m.ID
		byID[m.ID] = m
	}
	ring, err := NewRing(ids)
	if err != nil {
		return err
	}
	others := make([]string, 0, len(ids))
	for _, id := range ids {
		if id != n.opts.Self.ID {
			others = append(others, id)
		}
	}
	without, err := NewRing(others)
	if err != nil {
		return err
	}
	since := time.Now()
	if prev := n.cur.Load(); prev != nil && slices.Equal(prev.ring.Members(), ring.Members()) {
		since = prev.since
	}
	n.cur.Store(&view{members: ms, byID: byID, ring: ring, without: without, since: since, rings: map[string]*Ring{}})
	return nil
}

func (n *Node) follow() {
	defer n.wg.Done()
	t := time.NewTicker(takeOverEvery)
	defer t.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-n.opts.Membership.Changes():
			if err := n.rebuild(); err != nil {
				n.log.Error().Err(err).Msg("ring rebuild failed; keeping the last ring")
			}
			n.log.Info().Int("members", len(n.Members())).Msg("cluster membership changed")
		case <-t.C:
		}
		if n.opts.Copies != nil && n.taking.CompareAndSwap(false, true) {
			n.wg.Add(1)
			go func() {
				defer n.wg.Done()
				defer n.taking.Store(false)
				n.takeOver()
			}()
		}
	}
}

// takeOver uploads the copies kept for primaries that are not members,
// and every reconcileEvery settles with live primaries the copies they
// may have lost; one runs at a time, off the follow loop (uploads take a
// while).
func (n *Node) takeOver() {
	v := n.cur.Load()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-n.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	reconcile := time.Since(n.reconciled) >= reconcileEvery
	if reconcile {
		n.reconciled = time.Now()
	}
	for primary := range n.opts.Copies.Primaries() {
		m, alive := v.byID[primary]
		if alive && (!reconcile || primary == n.opts.Self.ID) {
			continue
		}
		if alive {
			n.reconcileWith(ctx, m)
			continue
		}
		up, err := n.opts.Copies.TakeOver(ctx, primary)
		ev := n.log.Info()
		if err != nil {
			ev = n.log.Warn().Err(err)
		}
		ev.Str("primary", primary).Int("uploaded", up).Msg("took over the write-back copies of a dead node")
	}
}

// reconcileWith settles the old copies kept for live primary m.
func (n *Node) reconcileWith(ctx context.Context, m Member) {
	pending := func(ctx context.Context, bucket, key string) (bool, error) {
		return n.opts.Client.Pending(ctx, m, bucket, key)
	}
	up, err := n.opts.Copies.Reconcile(ctx, m.ID, time.Now().Add(-reconcileAfter), pending)
	if err != nil {
		n.log.Debug().Err(err).Str("primary", m.ID).Msg("write-back copies not reconciled with their primary this round")
	}
	if up > 0 {
		n.log.Warn().Str("primary", m.ID).Int("uploaded", up).Msg("uploaded write-back copies a live primary no longer held")
	}
}

// Self is this node.
func (n *Node) Self() Member { return n.opts.Self }

// Members returns the live members, sorted by ID.
func (n *Node) Members() []Member { return n.cur.Load().members }

// Known returns the members this node knows of, alive or not (a static
// list knows its dead members; gossip forgets them), sorted by ID.
func (n *Node) Known() []Member {
	if k, ok := n.opts.Membership.(interface{ Known() []Member }); ok {
		return k.Known()
	}
	return n.Members()
}

// Owners returns the r members owning key, the primary first.
func (n *Node) Owners(key []byte, r int) []Member {
	v := n.cur.Load()
	ids := v.ring.Owners(key, r)
	out := make([]Member, len(ids))
	for i, id := range ids {
		out[i] = v.byID[id]
	}
	return out
}

// Heirs returns the live members other than this node that may hold key
// cached from before it was this node's, most likely first (see
// handOffDepth).
func (n *Node) Heirs(key []byte) []Member {
	v := n.cur.Load()
	depth := 1
	if time.Since(v.since) <= handOffFor {
		depth = handOffDepth
	}
	out := []string{n.opts.Self.ID}
	var heirs []Member
	for r, ok := v.without, true; ok; r, ok = v.ringWithout(out) {
		ids := r.Owners(key, 1)
		if len(ids) == 0 {
			break
		}
		heirs = append(heirs, v.byID[ids[0]])
		if len(heirs) == depth {
			break
		}
		out = append(out, ids[0])
		slices.Sort(out)
	}
	return heirs
}

// Close stops following the membership (which the caller closes).
func (n *Node) Close() error {
	n.once.Do(func() { close(n.stop) })
	n.wg.Wait()
	return nil
}
