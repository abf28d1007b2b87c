// `granary bench train --by-owners`: the cluster behind the endpoint read
// as a client that knows its placement reads it (granary mount, the boto3
// helper): the ring asked of the endpoint, each read sent to the member
// that owns the chunk it starts in.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/granary-dev/granary/api"
	"github.com/granary-dev/granary/bench"
	"github.com/granary-dev/granary/internal/ring"
)

// byOwners is a store over every member of the endpoint's cluster, with
// idle connections for conns concurrent requests to each.
func (b *benchFlags) byOwners(ctx context.Context, getenv Getenv, target string, conns int) (bench.Store, error) {
	bucket, _, err := parseS3URL(target)
	if err != nil {
		return nil, usageError{err}
	}
	node, err := b.cf.Remote(getenv)
	if err != nil {
		return nil, usageError{err}
	}
	ans, err := askRing(ctx, getenv, node)
	if err != nil {
		return nil, err
	}
	if len(ans.Members) < 2 || ans.ChunkSize <= 0 {
		return nil, usageError{fmt.Errorf("--by-owners: %s is not a member of a cluster", node.url)}
	}
	scheme, _, _ := strings.Cut(node.url, "://")
	ids := make([]string, len(ans.Members))
	index := make(map[string]int, len(ans.Members))
	own := &bench.Owners{Stores: make([]bench.Store, len(ans.Members))}
	for i, m := range ans.Members {
		if !ring.Routable(m.Addr) {
			return nil, fmt.Errorf("--by-owners: member %s advertises %q, which a client cannot reach", m.ID, m.Addr)
		}
		ids[i], index[m.ID] = m.ID, i
		other := *b
		other.cf.endpoint = scheme + "://" + m.Addr
		if own.Stores[i], _, err = other.store(getenv, target, conns); err != nil {
			return nil, err
		}
	}
	// Writes and the manifest go through the endpoint's own member.
	if self, ok := index[ans.Self]; ok && self != 0 {
		own.Stores[0], own.Stores[self] = own.Stores[self], own.Stores[0]
		index[ids[0]], index[ans.Self] = self, 0
	}
	r, err := ring.New(ids)
	if err != nil {
		return nil, err
	}
	own.Owner = func(key string, off int64) int {
		return index[r.Owners(ring.ChunkKey(bucket, key, off/ans.ChunkSize), 1)[0]]
	}
	return own, nil
}

// askRing makes the ring call (GET /_granary/ring) of node.
func askRing(ctx context.Context, getenv Getenv, node remote) (api.RingAnswer, error) {
	resp, err := adminCall(ctx, getenv, node, http.MethodGet, "/_granary/ring", nil)
	if err != nil {
		return api.RingAnswer{}, err
	}
	defer resp.Body.Close()
	var ans api.RingAnswer
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&ans); err != nil {
		return api.RingAnswer{}, fmt.Errorf("the ring of %s: %w", node.url, err)
	}
	return ans, nil
}
