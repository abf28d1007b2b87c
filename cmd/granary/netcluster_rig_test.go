// A cluster on real separate hosts for the network-fault tests: MinIO and
// each `granary serve` in a network namespace of its own (netnstest), the
// nodes joined by gossip, the test process on the same segment. Nodes can
// be cut off and healed, stopped (SIGSTOP) and resumed, killed and started
// again with an empty disk, and added.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/granary-dev/granary/api"
	"github.com/granary-dev/granary/internal/miniotest"
	"github.com/granary-dev/granary/internal/netnstest"
)

// The timeouts the nodes run with; every request through a node that is
// up must end well within what they add up to (netRequestBound).
const (
	netPeerTimeout   = 2 * time.Second
	netOriginTimeout = 2 * time.Second
	// netRequestBound is the longest a request through a live node may
	// take: a chain of timeouts (peer, next owner, origin, revalidation)
	// and a busy 2-core machine running every process under -race fit in
	// it many times over; a hang does not.
	netRequestBound = 45 * time.Second
	// netChunk is the nodes' --chunk-size.
	netChunk = 256 << 10
)

// netNode is one granary node on a host of its own.
type netNode struct {
	id     string
	host   *netnstest.Host
	addr   string // S3 host:port
	gossip string // gossip host:port
	child  *child
	client *minio.Client
	// disrupted counts the faults done to the node (cut, stop, kill):
	// a request that saw one is not judged (the client cannot tell a
	// node cut off from one that hangs).
	disrupted int
	up        bool // serving and reachable: the load may use it
}

// netCluster is the segment, the origin and the nodes.
type netCluster struct {
	t      *testing.T
	seg    *netnstest.Net
	origin *netnstest.Host
	mio    *miniotest.Server
	direct *minio.Client // MinIO, from the test
	env    map[string]string
	config string // the nodes' YAML file

	mu    sync.Mutex // guards nodes' up and disrupted
	nodes []*netNode
}

// startNetCluster starts MinIO on a host and n nodes on hosts of their
// own, and waits until every node sees all n.
func startNetCluster(t *testing.T, n int, yaml string) *netCluster {
	t.Helper()
	seg := netnstest.New(t)
	c := &netCluster{t: t, seg: seg, origin: seg.Host(t)}
	c.mio = miniotest.StartTWith(t, miniotest.Options{Host: c.origin.IP, Command: c.origin.Command})
	c.direct = directClient(t, c.mio)
	c.env = map[string]string{
		"GRANARY_ACCESS_KEY": "cluster-access", "GRANARY_SECRET_KEY": "cluster-secret-key",
		"GRANARY_ORIGIN_ACCESS_KEY": c.mio.AccessKey, "GRANARY_ORIGIN_SECRET_KEY": c.mio.SecretKey,
		"GRANARY_CLUSTER_SECRET": testClusterSecret, "GRANARY_LOG_LEVEL": "warn",
	}
	c.config = filepath.Join(t.TempDir(), "granary.yaml")
	if err := os.WriteFile(c.config, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	for range n {
		c.add()
	}
	c.converge(n)
	return c
}

// add starts a new node on a new host, joining through the first node.
func (c *netCluster) add() *netNode {
	c.t.Helper()
	h := c.seg.Host(c.t)
	nd := &netNode{id: fmt.Sprintf("n%d", len(c.nodes)+1), host: h, addr: h.IP + ":9000", gossip: h.IP + ":7946"}
	c.mu.Lock()
	c.nodes = append(c.nodes, nd)
	c.mu.Unlock()
	c.start(nd)
	return nd
}

// start runs nd's process with an empty data directory and marks it up.
func (c *netCluster) start(nd *netNode) {
	c.t.Helper()
	env := map[string]string{"GRANARY_DATA_DIR": c.t.TempDir()}
	for k, v := range c.env {
		env[k] = v
	}
	args := []string{"--listen", nd.addr, "--gossip-bind", nd.gossip, "--node-id", nd.id,
		"--origin", "s3://" + c.mio.Endpoint + "?secure=false", "--config", c.config,
		"--peer-timeout", netPeerTimeout.String(), "--origin-timeout", netOriginTimeout.String(),
		"--chunk-size", strconv.Itoa(netChunk), "--ram", "128MiB", "--disk", "512MiB", "--ttl", "5s"}
	if first := c.nodes[0]; first != nd {
		args = append(args, "--join", first.gossip)
	} else if len(c.nodes) > 1 {
		args = append(args, "--join", c.nodes[1].gossip)
	}
	nd.child = startChildIn(c.t, nd.host, env, args...)
	nd.client = netClient(c.t, c.env, nd.addr)
	c.mu.Lock()
	nd.up = true
	c.mu.Unlock()
}

// netClient is an S3 client of the node at addr that tries each request
// once (the load judges single attempts).
func netClient(t *testing.T, env map[string]string, addr string) *minio.Client {
	t.Helper()
	cl, err := minio.New(addr, &minio.Options{
		Creds:      credentials.NewStaticV4(env["GRANARY_ACCESS_KEY"], env["GRANARY_SECRET_KEY"], ""),
		Region:     "us-east-1",
		MaxRetries: 1,
		Transport:  &http.Transport{MaxIdleConnsPerHost: 16},
	})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// disrupt marks nd down (the load stops choosing it) and counts a fault.
func (c *netCluster) disrupt(nd *netNode) {
	c.mu.Lock()
	nd.up = false
	nd.disrupted++
	c.mu.Unlock()
}

// restore marks nd up again.
func (c *netCluster) restore(nd *netNode) {
	c.mu.Lock()
	nd.up = true
	c.mu.Unlock()
}

// pick returns a node that is up, at random (by i), and its fault count.
func (c *netCluster) pick(i int) (*netNode, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var up []*netNode
	for _, nd := range c.nodes {
		if nd.up {
			up = append(up, nd)
		}
	}
	if len(up) == 0 {
		return nil, 0
	}
	nd := up[i%len(up)]
	return nd, nd.disrupted
}

// undisturbed reports whether nd saw no fault since it had seen count.
func (c *netCluster) undisturbed(nd *netNode, count int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return nd.disrupted == count && nd.up
}

// cut takes nd off the network; heal puts it back.
func (c *netCluster) cut(nd *netNode) {
	c.disrupt(nd)
	nd.host.Cut(c.t)
}

// heal waits (bounded) until this process, where the load's clients
// run, reaches nd again before the load may choose it: the link is up at
// once, but a neighbour entry that failed while it was down answers "no
// route to host" for a while.
func (c *netCluster) heal(nd *netNode) {
	nd.host.Heal(c.t)
	waitFor(c.t, time.Minute, nd.id+" reachable again", func() bool {
		conn, err := net.DialTimeout("tcp", nd.addr, time.Second)
		if err == nil {
			conn.Close()
		}
		return err == nil
	})
	c.restore(nd)
}

// pause stops nd's process (SIGSTOP: a hung peer whose connections stay
// open); resume continues it.
func (c *netCluster) pause(nd *netNode) {
	c.disrupt(nd)
	if err := nd.child.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		c.t.Fatal(err)
	}
}

func (c *netCluster) resume(nd *netNode) {
	if err := nd.child.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		c.t.Fatal(err)
	}
	c.restore(nd)
}

// kill kills nd's process (SIGKILL).
func (c *netCluster) kill(nd *netNode) {
	c.disrupt(nd)
	nd.child.kill(c.t)
}

// status is node nd's view of the cluster.
func (c *netCluster) status(nd *netNode) (api.ClusterStatus, error) {
	var cs api.ClusterStatus
	node, err := (&clientFlags{endpoint: "http://" + nd.addr}).Remote(envMap(c.env))
	if err != nil {
		return cs, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := adminCall(ctx, envMap(c.env), node, "GET", "/_granary/status", nil)
	if err != nil {
		return cs, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return cs, err
	}
	return cs, json.Unmarshal(body, &cs)
}

// converge waits until every node that is up sees the same n healthy
// members with the same ring shares.
func (c *netCluster) converge(n int) {
	c.t.Helper()
	var last string
	start := time.Now()
	deadline := start.Add(3 * time.Minute)
	for {
		agreed, why := c.agree(n)
		if agreed {
			c.t.Logf("converged on %d members in %v", n, time.Since(start).Round(100*time.Millisecond))
			return
		}
		last = why
		if time.Now().After(deadline) {
			c.t.Fatalf("the cluster did not converge on %d members in 3 minutes: %s", n, last)
		}
		time.Sleep(100 * time.Millisecond) // polling interval
	}
}

// agree reports whether every node that is up sees the same n healthy
// members and ring (members that died may be listed besides, unhealthy),
// and if not, why.
func (c *netCluster) agree(n int) (bool, string) {
	c.mu.Lock()
	var up []*netNode
	for _, nd := range c.nodes {
		if nd.up {
			up = append(up, nd)
		}
	}
	c.mu.Unlock()
	var first []api.NodeStatus
	for _, nd := range up {
		cs, err := c.status(nd)
		if err != nil {
			return false, fmt.Sprintf("%s: %v", nd.id, err)
		}
		view := make([]api.NodeStatus, 0, len(cs.Nodes))
		for _, m := range cs.Nodes {
			if m.Healthy { // a member that died is listed, unhealthy
				view = append(view, api.NodeStatus{ID: m.ID, Addr: m.Addr, RingShare: m.RingShare})
			}
		}
		if len(view) != n {
			return false, fmt.Sprintf("%s sees %d healthy members, not %d", nd.id, len(view), n)
		}
		slices.SortFunc(view, func(a, b api.NodeStatus) int { return strings.Compare(a.ID, b.ID) })
		if first == nil {
			first = view
		} else if !slices.EqualFunc(first, view, func(a, b api.NodeStatus) bool {
			return a.ID == b.ID && a.Addr == b.Addr && a.RingShare == b.RingShare
		}) {
			return false, fmt.Sprintf("%s sees %+v, %s sees %+v", up[0].id, first, nd.id, view)
		}
	}
	return true, ""
}
