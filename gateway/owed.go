// Invalidations a member missed. A write tells every live member to forget
// the key's old version before it is acknowledged (invalidate, peers.go);
// a member that could not be told (its forget failed: hung, partitioned,
// or it was not live then: dead to this node's eyes, perhaps only cut off)
// is owed that forget. The engine sends what it owes to each member as
// soon as it is live and answers, so a member that comes back never goes
// on serving a version it should have forgotten. Owed forgets carry no
// version (they only drop; a redelivered one may arrive after a newer
// write's). Past maxOwed keys a member is owed a forget of everything it
// caches of objects' metadata and listings (its data stays: chunks are
// named by version).
package gateway

import (
	"context"
	"sync"
	"time"

	"github.com/granary-dev/granary/cluster"
)

// maxOwed bounds the keys owed to one member (a variable for tests).
var maxOwed = 10000

// owedEvery is how often owed forgets are delivered.
const owedEvery = 2 * time.Second

// owedBatch bounds the forgets sent to one member per round.
const owedBatch = 512

// owedKey is a key owed a forget.
type owedKey struct{ bucket, key string }

// owing is what one member is owed. gen counts changes: a delivery
// settles an entry only if it did not change meanwhile.
type owing struct {
	keys map[owedKey]uint64 // key -> gen when it was owed
	all  uint64             // gen when everything became owed; 0: not
}

// owedForgets is what every member is owed. The zero value is ready.
type owedForgets struct {
	mu  sync.Mutex // guards by and gen
	by  map[string]*owing
	gen uint64
}

// add records that member is owed a forget of bucket/key.
func (o *owedForgets) add(member, bucket, key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.by == nil {
		o.by = make(map[string]*owing)
	}
	w := o.by[member]
	if w == nil {
		w = &owing{keys: make(map[owedKey]uint64)}
		o.by[member] = w
	}
	o.gen++
	if w.all != 0 {
		w.all = o.gen
		return
	}
	w.keys[owedKey{bucket, key}] = o.gen
	if len(w.keys) > maxOwed {
		w.keys, w.all = make(map[owedKey]uint64), o.gen
	}
}

// due returns up to n keys owed to member with their gens, or all's gen
// if everything is owed (then no keys).
func (o *owedForgets) due(member string, n int) (keys map[owedKey]uint64, all uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	w := o.by[member]
	if w == nil {
		return nil, 0
	}
	if w.all != 0 {
		return nil, w.all
	}
	keys = make(map[owedKey]uint64, min(n, len(w.keys)))
	for k, g := range w.keys {
		if len(keys) == n {
			break
		}
		keys[k] = g
	}
	return keys, 0
}

// settle records that member was told to forget k (gen as due gave it).
func (o *owedForgets) settle(member string, k owedKey, gen uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if w := o.by[member]; w != nil && w.keys[k] == gen {
		delete(w.keys, k)
		o.tidyLocked(member, w)
	}
}

// settleAll records that member forgot everything (gen as due gave it).
func (o *owedForgets) settleAll(member string, gen uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if w := o.by[member]; w != nil && w.all == gen {
		w.all = 0
		o.tidyLocked(member, w)
	}
}

func (o *owedForgets) tidyLocked(member string, w *owing) {
	if w.all == 0 && len(w.keys) == 0 {
		delete(o.by, member)
	}
}

// owedTo returns the members owed anything.
func (o *owedForgets) owedTo() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]string, 0, len(o.by))
	for m := range o.by {
		out = append(out, m)
	}
	return out
}

// keep drops what is owed to members not in known (gone for good).
func (o *owedForgets) keep(known []cluster.Member) {
	ids := make(map[string]bool, len(known))
	for _, m := range known {
		ids[m.ID] = true
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for m := range o.by {
		if !ids[m] {
			delete(o.by, m)
		}
	}
}

// peerLoop sends owed forgets to live members every owedEvery, and asks
// them what their catalogs list every coversEvery (listshare.go), until
// the engine closes.
func (e *Engine) peerLoop() {
	defer e.peer.loop.Done()
	owed, covers := time.NewTicker(owedEvery), time.NewTicker(coversEvery)
	defer owed.Stop()
	defer covers.Stop()
	for {
		select {
		case <-e.fillCtx.Done():
			return
		case <-owed.C:
			e.deliverOwedOnce(e.fillCtx)
		case <-covers.C:
			e.refreshCovers(e.fillCtx)
		}
	}
}

// deliverOwedOnce makes one round: each live member owed anything gets up
// to owedBatch forgets (or one forget of everything), stopping at its
// first failure.
func (e *Engine) deliverOwedOnce(ctx context.Context) {
	p := e.peer
	p.owed.keep(p.peers.Known())
	live := make(map[string]cluster.Member)
	for _, m := range p.peers.Members() {
		live[m.ID] = m
	}
	client := p.peers.Client()
	for _, id := range p.owed.owedTo() {
		m, ok := live[id]
		if !ok {
			continue
		}
		keys, all := p.owed.due(id, owedBatch)
		if all != 0 {
			if err := client.ForgetAll(ctx, m); err == nil {
				p.owed.settleAll(id, all)
				e.log.Info().Str("peer", id).Msg("told a member that missed too many changes to forget what it cached of them")
			}
			continue
		}
		sent := 0
		for k, gen := range keys {
			if client.Forget(ctx, m, k.bucket, k.key, nil) != nil {
				break
			}
			p.owed.settle(id, k, gen)
			sent++
		}
		if sent > 0 {
			e.log.Info().Str("peer", id).Int("forgets", sent).Msg("told a member the changes it missed")
		}
	}
}
