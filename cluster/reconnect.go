// Reconnecting to members that died. memberlist stops gossiping to
// a dead member GossipToTheDeadTime after its death, so the two sides of
// a partition that heals later would stay apart for good, each serving
// with a ring of its own. Every node remembers the members it saw drop
// out and, every few probe intervals, tries to join each again until it
// answers or reconnectFor has passed: a join is a full state exchange, in
// which each side learns the other declared it dead and refutes it, so
// the cluster becomes one again. A member may also come back by a gossip
// message alone (memberlist gossips to the dead for a while), which tells
// this node it is alive but tells it nothing of this node's cluster: it is
// joined at once too, rather than at memberlist's next periodic exchange
// (30 s later).
package cluster

import (
	"slices"
	"strings"
	"time"
)

// reconnectFor is how long a member that dropped out is tried again (a
// member that left for good costs a failed dial per round until then).
const reconnectFor = 24 * time.Hour

// deadMember is a member that died: its S3 address, where its gossip
// listened, and since when it is dead.
type deadMember struct {
	addr, gossip string
	since        time.Time
}

// reconnectEvery is the reconnect period for probe interval p (0: 1s).
func reconnectEvery(p time.Duration) time.Duration {
	if p <= 0 {
		p = time.Second
	}
	return 5 * p
}

// reconnect tries to join every member that dropped out, each period,
// until Close.
func (g *Gossip) reconnect(every time.Duration) {
	defer close(g.reconnectDone)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-g.stop:
			return
		case addr := <-g.events.back:
			if !g.isDown() {
				g.rejoin(addr, "")
			}
			continue
		case <-tick.C:
		}
		if g.isDown() {
			continue // killed (tests): nothing to join with
		}
		for _, id := range g.events.deadIDs(time.Now()) {
			select {
			case <-g.stop:
				return
			default:
			}
			addr, ok := g.events.deadAddr(id)
			if !ok {
				continue // it came back meanwhile
			}
			g.rejoin(addr, id)
		}
	}
}

// rejoin makes one join of the member at addr (id, if known, for the log).
func (g *Gossip) rejoin(addr, id string) {
	if n, err := g.ml.Join([]string{addr}); n > 0 {
		g.log.Info().Str("node", id).Str("gossip", addr).Msg("gossip: reconnected to a member that had dropped out")
	} else {
		g.log.Debug().Err(err).Str("node", id).Str("gossip", addr).Msg("gossip: a member that dropped out does not answer")
	}
}

// cameBack queues a sync with a member that came back (addr is its gossip
// address); called with e.mu held. A full queue drops it: the periodic
// exchange still comes.
func (e *gossipEvents) cameBack(addr string) {
	select {
	case e.back <- addr:
	default:
	}
}

// deadIDs returns the members to reconnect to, sorted, and forgets those
// that dropped out more than reconnectFor before now.
func (e *gossipEvents) deadIDs(now time.Time) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var ids []string
	for id, d := range e.dead {
		if now.Sub(d.since) > reconnectFor {
			delete(e.dead, id)
			continue
		}
		ids = append(ids, id)
	}
	slices.SortFunc(ids, strings.Compare)
	return ids
}

// deadAddr is the gossip address of member id, if it is still out.
func (e *gossipEvents) deadAddr(id string) (string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	d, ok := e.dead[id]
	return d.gossip, ok
}

// isDown reports whether memberlist was shut down.
func (g *Gossip) isDown() bool {
	g.downMu.Lock()
	defer g.downMu.Unlock()
	return g.down
}

// known returns the live members and the dead ones, sorted by ID.
func (e *gossipEvents) known() []Member {
	out := e.snapshot()
	e.mu.Lock()
	for id, d := range e.dead {
		if _, alive := e.members[id]; !alive {
			out = append(out, Member{ID: id, Addr: d.addr})
		}
	}
	e.mu.Unlock()
	slices.SortFunc(out, func(a, b Member) int { return strings.Compare(a.ID, b.ID) })
	return out
}
