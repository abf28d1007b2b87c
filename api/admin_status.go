// GET /_granary/status: this node's status, or in a cluster every live
// member's (asked over the peer protocol, each bounded by the peer
// timeout), so one call tells a scheduler where a bucket, prefix or
// object is cached.
package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"sync"

	"github.com/gofiber/fiber/v2"
	"github.com/granary-dev/granary/access"
	"github.com/granary-dev/granary/ops"
)

// ClusterStatus is the answer of a cluster member: one entry per member
// it knows of (a dead static peer too, unhealthy), this node first.
type ClusterStatus struct {
	Self  string       `json:"self"`
	Nodes []NodeStatus `json:"nodes"`
}

// NodeStatus is one member's status document, or why it has none.
type NodeStatus struct {
	ID      string `json:"id"`
	Addr    string `json:"addr"`
	Healthy bool   `json:"healthy"`
	// RingShare is the member's share of the ring's partitions as their
	// primary owner (0 for a member that is not live).
	RingShare float64         `json:"ringShare"`
	Error     string          `json:"error,omitempty"`
	Status    json.RawMessage `json:"status,omitempty"`
}

// peerStatus answers a verified member's status call: the caller it acts
// for was authorized on that member, so this node shows everything. A
// call with view=objects asks for this node's objects page (the object
// browser's, admin_objects.go), else it is the node's status.
func (a *Admin) peerStatus(c *fiber.Ctx) error {
	r := requestOf(c)
	r.policy = access.Unrestricted
	if string(c.Request().URI().QueryArgs().Peek(viewParam)) == viewObjects {
		return a.nodeObjects(c, r)
	}
	return a.nodeStatus(c, r)
}

func (a *Admin) status(c *fiber.Ctx, r *request) error {
	p := a.opts
	if p.Node == nil || p.Client == nil {
		return a.nodeStatus(c, r)
	}
	args := c.Request().URI().QueryArgs()
	q := url.Values{}
	for _, k := range []string{"bucket", "prefix", "key"} {
		if v := args.Peek(k); len(v) > 0 {
			q.Set(k, string(v))
		}
	}
	r.bucket = q.Get("bucket")
	if r.bucket != "" {
		if err := checkBucket(r.bucket); err != nil {
			return err
		}
	}
	return c.JSON(a.askMembers(r, q, visibleIn))
}

// askMembers asks every member the cluster knows (this one too, over the
// peer protocol, each bounded by the peer timeout) for its status
// document of query q, passes each through filter for the caller of r,
// and returns them this node first.
func (a *Admin) askMembers(r *request, q url.Values, filter func(json.RawMessage, *access.Policy) (json.RawMessage, error)) ClusterStatus {
	p := a.opts
	members, shares := p.Node.Known(), p.Node.Shares()
	out := ClusterStatus{Self: p.Self.ID, Nodes: make([]NodeStatus, len(members))}
	// The request's context, taken once: fiber's Ctx is not safe for
	// concurrent use.
	ctx := context.WithoutCancel(r.ctx)
	var wg sync.WaitGroup
	for i, m := range members {
		out.Nodes[i] = NodeStatus{ID: m.ID, Addr: m.Addr, RingShare: shares[m.ID]}
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := p.Client.Status(ctx, m, q)
			if err == nil {
				st, err = filter(st, r.policy)
			}
			if err != nil {
				out.Nodes[i].Error = err.Error()
				return
			}
			out.Nodes[i].Healthy, out.Nodes[i].Status = true, st
		}()
	}
	wg.Wait()
	selfFirst(out.Nodes, p.Self.ID)
	return out
}

// visibleIn is a member's status document (which a member answers for
// the cluster, whole) as the caller may see it: the warm-ups of buckets
// and prefixes policy lets it administer, as on this node
// (visibleWarms). The rest passes as the member wrote it.
func visibleIn(st json.RawMessage, policy *access.Policy) (json.RawMessage, error) {
	if policy.Node(access.Admin) {
		return st, nil
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(st, &doc); err != nil {
		return nil, fmt.Errorf("a member's status: %w", err)
	}
	var warms []ops.WarmStatus
	if raw, ok := doc["warmups"]; ok {
		if err := json.Unmarshal(raw, &warms); err != nil {
			return nil, fmt.Errorf("a member's warm-ups: %w", err)
		}
	}
	var err error
	if doc["warmups"], err = json.Marshal(administered(warms, policy)); err != nil {
		return nil, err
	}
	return json.Marshal(doc)
}

// selfFirst moves this node's entry to the front.
func selfFirst(nodes []NodeStatus, self string) {
	for i := range nodes {
		if nodes[i].ID == self {
			nodes[0], nodes[i] = nodes[i], nodes[0]
			return
		}
	}
}
