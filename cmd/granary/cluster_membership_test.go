// The cluster when members change, through real processes: write-back
// data is served by every node before it reaches the origin, and,
// acknowledged with a copy on a second node, survives the death of the
// node that took it; nodes that join through gossip (--join) serve.
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/granary-dev/granary/api"
	"github.com/granary-dev/granary/internal/miniotest"
	"github.com/granary-dev/granary/internal/slowproxy"
)

func TestClusterWriteBackSurvivesNodeLoss(t *testing.T) {
	mio := miniotest.StartT(t)
	// A slow link, so most objects are still only in the cluster when
	// the node that took them dies.
	proxy, err := slowproxy.Start(mio.Endpoint, slowproxy.Options{Total: 1.5e6})
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	r := startCluster(t, mio, "s3://"+proxy.Addr()+"?secure=false", 3, "--chunk-size", "1MiB", "--write-mode", "write-back")
	ctx := context.Background()
	direct := directClient(t, mio)
	if err := direct.MakeBucket(ctx, "ckpt", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	c1 := nodeClient(t, r.env, r.addrs[0])
	const shards = 8
	data := make([][]byte, shards)
	for i := range shards {
		data[i] = randomBytes(uint64(200+i), 3<<20+i*100<<10)
		if _, err := c1.PutObject(ctx, "ckpt", objectName(i), bytes.NewReader(data[i]), int64(len(data[i])), minio.PutObjectOptions{}); err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
	}
	// Every node serves them at once, though the origin has few or none.
	c3 := nodeClient(t, r.env, r.addrs[2])
	for i := range shards {
		if !bytes.Equal(getAll(t, c3, "ckpt", objectName(i)), data[i]) {
			t.Fatalf("%s read through node 3 before its upload differs", objectName(i))
		}
	}
	r.nodes[0].kill(t)
	r.nodes[0] = nil
	missing := 0
	for i := range shards {
		if _, err := direct.StatObject(ctx, "ckpt", objectName(i), minio.StatObjectOptions{}); err != nil {
			missing++
		}
	}
	if missing == 0 {
		t.Fatal("every object reached the origin before the kill: nothing was at stake")
	}
	// The node holding the copies sees the death and uploads them.
	waitFor(t, 2*time.Minute, "every acknowledged object at the origin", func() bool {
		for i := range shards {
			if _, err := direct.StatObject(ctx, "ckpt", objectName(i), minio.StatObjectOptions{}); err != nil {
				return false
			}
		}
		return true
	})
	c2 := nodeClient(t, r.env, r.addrs[1])
	for i := range shards {
		if sha256.Sum256(getAll(t, direct, "ckpt", objectName(i))) != sha256.Sum256(data[i]) {
			t.Fatalf("%s at the origin differs from what was acknowledged", objectName(i))
		}
		if !bytes.Equal(getAll(t, c2, "ckpt", objectName(i)), data[i]) {
			t.Fatalf("%s read through node 2 differs", objectName(i))
		}
	}
	t.Logf("%d of %d objects were not at the origin when their node died", missing, shards)
}

func TestClusterJoinThroughGossip(t *testing.T) {
	mio := miniotest.StartT(t)
	env := map[string]string{
		"GRANARY_ACCESS_KEY": "cluster-access", "GRANARY_SECRET_KEY": "cluster-secret-key",
		"GRANARY_ORIGIN_ACCESS_KEY": mio.AccessKey, "GRANARY_ORIGIN_SECRET_KEY": mio.SecretKey,
		"GRANARY_CLUSTER_SECRET": testClusterSecret, "GRANARY_LOG_LEVEL": "warn",
	}
	start := func(i int, join string) *child {
		e := map[string]string{"GRANARY_DATA_DIR": t.TempDir()}
		for k, v := range env {
			e[k] = v
		}
		args := []string{"--origin", "s3://" + mio.Endpoint + "?secure=false", "--node-id", fmt.Sprintf("g%d", i+1),
			"--gossip-bind", "127.0.0.1:0", "--chunk-size", "256KiB"}
		if join != "" {
			args = append(args, "--join", join)
		}
		return startChild(t, e, args...)
	}
	a := start(0, "")
	if a.gossip == "" || strings.HasSuffix(a.gossip, ":0") {
		t.Fatalf("the banner names no gossip address to join:\n%s", a.stderr.String())
	}
	b := start(1, a.gossip)
	waitMembers(t, a.addr, env, 2)
	ctx := context.Background()
	ca := nodeClient(t, env, a.addr)
	if err := ca.MakeBucket(ctx, "data", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	objs := make([][]byte, 20)
	for i := range objs {
		objs[i] = randomBytes(uint64(300+i), 600<<10) // 3 chunks
		if _, err := ca.PutObject(ctx, "data", objectName(i), bytes.NewReader(objs[i]), int64(len(objs[i])), minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	readAll := func(addr string) {
		cl := nodeClient(t, env, addr)
		for i := range objs {
			if !bytes.Equal(getAll(t, cl, "data", objectName(i)), objs[i]) {
				t.Fatalf("%s via %s differs", objectName(i), addr)
			}
		}
	}
	readAll(b.addr) // the owners (a and b) now hold every chunk
	gets := func(nodes ...*child) float64 {
		sum := 0.0
		for _, n := range nodes {
			sum += metric(t, n.addr, "granary_origin_requests_total", `op="get"`)
		}
		return sum
	}
	before := gets(a, b)
	// A third node joins through the second, takes its share of the ring
	// and serves at once: the chunks it now owns come from their former
	// owners, not from the origin.
	c := start(2, b.gossip)
	waitMembers(t, a.addr, env, 3)
	waitMembers(t, b.addr, env, 3)
	waitMembers(t, c.addr, env, 3)
	readAll(c.addr)
	readAll(a.addr)
	if moved := gets(a, b, c) - before; moved > 6 {
		t.Fatalf("after the join the cluster read the origin %v times for 60 cached chunks; a third of them moved to the new node and should have come from their former owners", moved)
	}
	if metric(t, c.addr, "granary_peer_chunk_reads_total") == 0 {
		t.Fatal("the joined node read no chunk from its peers")
	}
	t.Logf("origin reads after the join: %v for 60 cached chunks", gets(a, b, c)-before)
	// A member that leaves drops out of the others' view.
	b.stop(t)
	waitMembers(t, a.addr, env, 2)
}

// waitMembers waits until the node at addr reports n healthy members.
func waitMembers(t *testing.T, addr string, env map[string]string, n int) {
	t.Helper()
	waitMembersAt(t, "http://"+addr, env, n)
}

// waitMembersAt is waitMembers of the node at base (scheme://host:port).
func waitMembersAt(t *testing.T, base string, env map[string]string, n int) {
	t.Helper()
	node, err := (&clientFlags{endpoint: base}).Remote(envMap(env))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, fmt.Sprintf("%d members seen by %s", n, base), func() bool {
		resp, err := adminCall(context.Background(), envMap(env), node, "GET", "/_granary/status", nil)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var cs api.ClusterStatus
		body, _ := io.ReadAll(resp.Body)
		if json.Unmarshal(body, &cs) != nil {
			return false
		}
		healthy := 0
		for _, node := range cs.Nodes {
			if node.Healthy {
				healthy++
			}
		}
		return len(cs.Nodes) == n && healthy == n
	})
}
