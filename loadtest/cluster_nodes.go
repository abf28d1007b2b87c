// The cluster scenario's nodes: three `granary serve` processes in front
// of one origin, either a cluster (static --peers, a shared cluster
// secret) or three independent nodes, and what the scenario asks them:
// membership and per-object holdings over the signed admin API, and their
// /metrics summed into where reads were served from.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/minio/minio-go/v7/pkg/signer"
)

// clusterSecret authenticates the scenario's cluster nodes to each other.
const clusterSecret = "loadtest-cluster-secret-0123456789"

// nodeSet is three granary nodes in front of the same origin. In a
// cluster, node i has ID ids[i]; independent nodes have IDs only as the
// report's names for them.
type nodeSet struct {
	ids       []string
	nodes     []*granaryProc
	clustered bool
}

// startNodeSet starts three nodes (each its own data directory) in front
// of origin (host:port, credentials access/secret) with the given budget
// and extra serve flags, as a cluster or independent, and waits until each
// answers /healthz and, in a cluster, sees all three members.
func startNodeSet(ctx context.Context, bin, origin, access, secret string, ram, disk int64, clustered bool, extra ...string) (*nodeSet, error) {
	return startNodes(ctx, len(clusterIDs), bin, origin, access, secret, ram, disk, clustered, extra...)
}

// startNodes is startNodeSet for the first n of the node IDs (one node
// alone is n 1, not clustered).
func startNodes(ctx context.Context, n int, bin, origin, access, secret string, ram, disk int64, clustered bool, extra ...string) (*nodeSet, error) {
	s := &nodeSet{ids: clusterIDs[:n], clustered: clustered}
	addrs, err := reservePorts(len(s.ids))
	if err != nil {
		return nil, err
	}
	var peers []string
	for i, id := range s.ids {
		peers = append(peers, id+"="+addrs[i])
	}
	for i, id := range s.ids {
		args, env := originFlags(origin, access, secret, ram, disk)
		if clustered {
			args = append(args, "--node-id", id, "--peers", strings.Join(peers, ","))
			env = append(env, "GRANARY_CLUSTER_SECRET="+clusterSecret)
		}
		g, err := launchGranary(bin, "granary-loadtest-cluster-", addrs[i], append(args, extra...), env, pins.node(i))
		if err != nil {
			s.stop()
			return nil, fmt.Errorf("node %s: %w", id, err)
		}
		s.nodes = append(s.nodes, g)
	}
	for i, g := range s.nodes {
		if err := g.awaitReady(60 * time.Second); err != nil {
			s.stop()
			return nil, fmt.Errorf("node %s: %w", s.ids[i], err)
		}
	}
	if clustered {
		if err := s.awaitMembers(ctx, 30*time.Second); err != nil {
			s.stop()
			return nil, err
		}
	}
	return s, nil
}

// reservePorts returns n distinct loopback addresses whose ports were
// free a moment ago (a cluster's static peers need them before start).
func reservePorts(n int) ([]string, error) {
	seen := map[int]bool{}
	var addrs []string
	for tries := 0; len(addrs) < n; tries++ {
		if tries > 10*n {
			return nil, errors.New("no distinct free ports")
		}
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		if !seen[p] {
			seen[p] = true
			addrs = append(addrs, fmt.Sprintf("127.0.0.1:%d", p))
		}
	}
	return addrs, nil
}

// stop stops every node that started.
func (s *nodeSet) stop() {
	for _, g := range s.nodes {
		g.stop()
	}
	s.nodes = nil
}

// tails returns the end of every node's log.
func (s *nodeSet) tails() string {
	var b strings.Builder
	for i, g := range s.nodes {
		fmt.Fprintf(&b, "--- %s log tail:\n%s\n", s.ids[i], g.tail())
	}
	return b.String()
}

// clusterStatus is the part of a cluster member's GET /_granary/status
// answer the scenario reads: every live member, and what each holds of
// the object asked about, per tier ("ram", "hot", "disk", "hot-disk").
type clusterStatus struct {
	Nodes []struct {
		ID      string `json:"id"`
		Healthy bool   `json:"healthy"`
		Error   string `json:"error"`
		Status  *struct {
			Object *struct {
				Size       int64            `json:"size"`
				HeldByTier map[string]int64 `json:"heldByTier"`
			} `json:"object"`
		} `json:"status"`
	} `json:"nodes"`
}

// awaitMembers polls every node's status until each lists all three
// members as healthy (so every node's ring has them all), at most limit.
func (s *nodeSet) awaitMembers(ctx context.Context, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for i, g := range s.nodes {
		for {
			var st clusterStatus
			err := adminGet(ctx, g.endpoint(), "/_granary/status", nil, &st)
			if err == nil && healthyCount(st) == len(s.ids) {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("node %s does not see %d healthy members after %v (last: %v, %d healthy)",
					s.ids[i], len(s.ids), limit, err, healthyCount(st))
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

func healthyCount(st clusterStatus) int {
	n := 0
	for _, m := range st.Nodes {
		if m.Healthy {
			n++
		}
	}
	return n
}

// heldByNode asks node 0 what every member holds of bucket/key: per node
// ID, the bytes in each tier.
func (s *nodeSet) heldByNode(ctx context.Context, bucket, key string) (map[string]map[string]int64, error) {
	var st clusterStatus
	q := url.Values{"bucket": {bucket}, "key": {key}}
	if err := adminGet(ctx, s.nodes[0].endpoint(), "/_granary/status", q, &st); err != nil {
		return nil, err
	}
	out := map[string]map[string]int64{}
	for _, m := range st.Nodes {
		if !m.Healthy || m.Status == nil || m.Status.Object == nil {
			return nil, fmt.Errorf("status of %s from %s: no answer (%s)", key, m.ID, m.Error)
		}
		out[m.ID] = m.Status.Object.HeldByTier
	}
	if len(out) != len(s.ids) {
		return nil, fmt.Errorf("status of %s: %d members answered, want %d", key, len(out), len(s.ids))
	}
	return out, nil
}

// adminGet sends a GET to endpoint's admin path signed with the node's S3
// credentials, and decodes the JSON answer into out.
func adminGet(ctx context.Context, endpoint, path string, q url.Values, out any) error {
	u := endpoint + path
	if len(q) > 0 {
		u += "?" + strings.ReplaceAll(q.Encode(), "+", "%20")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("X-Amz-Content-Sha256", emptySHA256)
	req = signer.SignV4(*req, granaryAccess, granarySecret, "", "us-east-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return fmt.Errorf("GET %s: status %d: %s", path, resp.StatusCode, msg)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// headObject sends one signed HEAD for key through cl and expects 200.
func headObject(ctx context.Context, cl *client, key string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, cl.t.endpoint+"/"+cl.bucket+"/"+key, nil)
	if err != nil {
		return err
	}
	req.Header.Set("X-Amz-Content-Sha256", emptySHA256)
	req = signer.SignV4(*req, cl.t.access, cl.t.secret, "", "us-east-1")
	resp, err := cl.http.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HEAD %s via %s: status %d", key, cl.t.name, resp.StatusCode)
	}
	return nil
}

// servedCounts say where a set of nodes served reads from, summed over the
// nodes: so far, or over an interval.
type servedCounts struct {
	ram, hot, disk float64 // chunk cache hits by tier (an owner's hit for a peer counts too; hot: copies in RAM or on disk)
	misses         float64
	peerReads      float64 // chunks a node read from their owner instead of the origin
	originGets     float64 // object reads sent to the origin (any result)
	originStats    float64 // metadata requests (HEAD) sent to the origin
	originReqs     float64 // every request sent to the origin
	originBytes    float64 // object bytes read from the origin
	redirects      float64 // GETs redirected to their owner (owner routing)
}

// servedOf sums the counters of every node's metrics.
func servedOf(ms []metricSet) servedCounts {
	var c servedCounts
	for _, m := range ms {
		c.ram += m.sumLabel("granary_cache_hits_total", `tier="ram"`)
		c.hot += m.sumLabel("granary_cache_hits_total", `tier="hot"`) + m.sumLabel("granary_cache_hits_total", `tier="hot-disk"`)
		c.disk += m.sumLabel("granary_cache_hits_total", `tier="disk"`)
		c.misses += m.sum("granary_cache_misses_total")
		c.peerReads += m.sum("granary_peer_chunk_reads_total")
		c.redirects += m.sumLabel("granary_requests_total", `code="307"`)
		c.originGets += m.originGets()
		c.originStats += m.sumLabel("granary_origin_requests_total", `op="stat"`)
		c.originReqs += m.sum("granary_origin_requests_total")
		c.originBytes += m.sum("granary_origin_read_bytes_total")
	}
	return c
}

// minus returns the counts between an earlier reading and c.
func (c servedCounts) minus(e servedCounts) servedCounts {
	return servedCounts{ram: c.ram - e.ram, hot: c.hot - e.hot, disk: c.disk - e.disk, misses: c.misses - e.misses,
		peerReads: c.peerReads - e.peerReads, originGets: c.originGets - e.originGets,
		originStats: c.originStats - e.originStats, originReqs: c.originReqs - e.originReqs,
		originBytes: c.originBytes - e.originBytes, redirects: c.redirects - e.redirects}
}

// cpu returns the CPU time the nodes have used, summed.
func (s *nodeSet) cpu() (time.Duration, error) {
	ticks, err := s.sum(func(g *granaryProc) (int64, error) {
		d, err := g.cpuTime()
		return int64(d), err
	})
	return time.Duration(ticks), err
}

// runTime returns the time the nodes' threads have run, summed, to the
// nanosecond: for rows too short for cpu's 10 ms ticks.
func (s *nodeSet) runTime() (time.Duration, error) {
	ns, err := s.sum(func(g *granaryProc) (int64, error) {
		d, err := g.runTime()
		return int64(d), err
	})
	return time.Duration(ns), err
}

// faults returns the minor page faults the nodes have taken, summed.
func (s *nodeSet) faults() (int64, error) { return s.sum((*granaryProc).faults) }

// sum adds up a count of every node.
func (s *nodeSet) sum(count func(*granaryProc) (int64, error)) (int64, error) {
	var sum int64
	for i, g := range s.nodes {
		n, err := count(g)
		if err != nil {
			return 0, fmt.Errorf("node %s: %w", s.ids[i], err)
		}
		sum += n
	}
	return sum, nil
}

// served scrapes every node and sums their counters.
func (s *nodeSet) served(ctx context.Context) (servedCounts, error) {
	ms := make([]metricSet, len(s.nodes))
	for i, g := range s.nodes {
		m, err := scrapeMetrics(ctx, g.endpoint())
		if err != nil {
			return servedCounts{}, fmt.Errorf("node %s: %w", s.ids[i], err)
		}
		ms[i] = m
	}
	return servedOf(ms), nil
}
