// A client's own placement of reads on a cluster's owners, as a client
// without Granary's ring does it (clients/python/granary_route.py): the
// ring call's members and partitions, and a chunk's partition
// (ring.Partition: XXH64 of its ring key).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/granary-dev/granary/api"
	"github.com/granary-dev/granary/internal/ring"
)

// placer sends each read to the endpoint of its chunk's primary owner.
type placer struct {
	endpoints  []string // by member index, with the scheme the ring was asked with
	partitions []int    // per partition, the primary's member index
	chunk      int64
}

// fetchPlacer asks c's target for the ring (GET /_granary/ring).
func fetchPlacer(ctx context.Context, c *client) (*placer, error) {
	resp, err := c.send(ctx, c.t.endpoint+"/_granary/ring", "", false)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("ring of %s: status %d: %s", c.t.name, resp.StatusCode, body)
	}
	var ans api.RingAnswer
	if err := json.Unmarshal(body, &ans); err != nil {
		return nil, fmt.Errorf("ring of %s: %w", c.t.name, err)
	}
	if len(ans.Partitions) == 0 || ans.ChunkSize <= 0 {
		return nil, fmt.Errorf("ring of %s: no partitions or chunk size", c.t.name)
	}
	scheme, _, _ := strings.Cut(c.t.endpoint, "://")
	p := &placer{partitions: ans.Partitions, chunk: ans.ChunkSize}
	for _, m := range ans.Members {
		p.endpoints = append(p.endpoints, scheme+"://"+m.Addr)
	}
	return p, nil
}

// endpoint is where the read of bucket/key from byte off goes.
func (p *placer) endpoint(bucket, key string, off int64) string {
	ck := ring.ChunkKey(bucket, key, off/p.chunk)
	return p.endpoints[p.partitions[ring.Partition(ck, len(p.partitions))]]
}
