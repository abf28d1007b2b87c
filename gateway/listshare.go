// Listings shared between members. A warm-up loads the catalog of the
// node it runs on; the other members learn which prefixes it lists
// (asking every coversEvery) and send a LIST under one of them to it, to
// be answered from its catalog rather than the origin. Each catalog
// follows the writes through every member (catalogChanged), so a page is
// as current from one member as from another.
package gateway

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/granary-dev/granary/cluster"
	"github.com/granary-dev/granary/cluster/peer"
	"github.com/granary-dev/granary/store"
)

// coversEvery is how often a node asks the members what their catalogs
// list.
const coversEvery = 30 * time.Second

// memberCovers is what each member's catalog lists, as last asked.
type memberCovers struct {
	mu sync.Mutex // guards by
	by map[string][]peer.Cover
}

// set records member's covers.
func (m *memberCovers) set(member string, covers []peer.Cover) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.by == nil {
		m.by = make(map[string][]peer.Cover)
	}
	m.by[member] = covers
}

// best returns the member among live whose catalog lists bucket/prefix
// under its longest prefix trusted by fr at now, and false if none.
func (m *memberCovers) best(live []cluster.Member, bucket, prefix string, fr Freshness, now time.Time) (cluster.Member, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out cluster.Member
	best := -1
	for _, mem := range live {
		for _, c := range m.by[mem.ID] {
			if c.Bucket == bucket && len(c.Prefix) > best && strings.HasPrefix(prefix, c.Prefix) && fr.fresh(c.At, now) {
				best, out = len(c.Prefix), mem
			}
		}
	}
	return out, best >= 0
}

// refreshCovers asks every other live member what its catalog lists.
func (e *Engine) refreshCovers(ctx context.Context) {
	p := e.peer
	self := p.peers.Self().ID
	for _, m := range p.peers.Members() {
		if m.ID == self {
			continue
		}
		covers, err := p.peers.Client().Coverage(ctx, m)
		if err != nil {
			continue // asked again next round; until then its old answer stands
		}
		p.covers.set(m.ID, covers)
	}
}

// listFromMembers answers a LIST page from the catalog of a member that
// lists the prefix, if one does; ok is false when the origin must be
// asked.
func (e *Engine) listFromMembers(ctx context.Context, bucket string, opts store.ListOptions, fr Freshness) (store.ListPage, bool) {
	if fr.Mode == Always {
		return store.ListPage{}, false
	}
	m, ok := e.peer.covers.best(e.peer.peers.Members(), bucket, opts.Prefix, fr, e.opts.Now())
	if !ok || m.ID == e.peer.peers.Self().ID {
		return store.ListPage{}, false
	}
	page, err := e.peer.peers.Client().ListCached(ctx, m, bucket, opts)
	if err != nil {
		e.logFor(ctx).Debug().Err(err).Str("peer", m.ID).Str("bucket", bucket).Msg("member did not list from its catalog; asking the origin")
		return store.ListPage{}, false
	}
	e.m.listIndexed.Inc()
	return page, true
}

// Coverage is the prefixes this node's catalog lists, for members.
func (b peerBackend) Coverage() ([]peer.Cover, error) {
	c := b.e.opts.Catalog
	if c == nil {
		return []peer.Cover{}, nil
	}
	covs, err := c.Coverage("")
	if err != nil {
		return nil, err
	}
	out := make([]peer.Cover, len(covs))
	for i, cv := range covs {
		out[i] = peer.Cover{Bucket: cv.Bucket, Prefix: cv.Prefix, At: cv.At}
	}
	return out, nil
}

// ListCached is a page from this node's catalog alone, for a member.
func (b peerBackend) ListCached(ctx context.Context, bucket string, opts store.ListOptions) (store.ListPage, error) {
	if page, ok := b.e.listFromCatalog(ctx, bucket, opts, b.e.freshness(bucket)); ok {
		return page, nil
	}
	return store.ListPage{}, store.ErrNotFound
}
