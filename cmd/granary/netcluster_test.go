// The cluster across real network faults (netcluster_rig_test.go): under
// a mixed load throughout (netcluster_load_test.go), one node is cut off
// and healed, the origin is cut off and comes back, a node hangs
// (SIGSTOP) and resumes, a node is killed and comes back with an empty
// disk, and a fourth node joins. No read may return wrong bytes, no
// request through a live node may outlast the bound its timeouts give,
// reads of the cached data set never fail, no acknowledged write is lost,
// and after each fault the cluster converges on one ring; a node cut off
// while a key it caches for good (freshness immutable) is replaced reads
// the new version once it is back.
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/granary-dev/granary/api"
	"github.com/granary-dev/granary/cluster"
)

func TestClusterAcrossNetworkFaults(t *testing.T) {
	c := startNetCluster(t, 3, "buckets:\n  "+netWBBucket+":\n    write-mode: write-back\n"+
		"  "+netFixedBucket+":\n    freshness: immutable\n")
	seeded := seedNet(t, c, 24)
	if err := c.direct.MakeBucket(context.Background(), netFixedBucket, minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	// Warm: every node reads every object once (its chunks go to their
	// owners, its metadata to the node).
	for _, nd := range c.nodes {
		for key, sum := range seeded {
			obj, err := nd.client.GetObject(context.Background(), netDataBucket, key, minio.GetObjectOptions{})
			if err != nil {
				t.Fatal(err)
			}
			data, err := io.ReadAll(obj)
			obj.Close()
			if err != nil || sha256.Sum256(data) != sum {
				t.Fatalf("warming %s through %s: %v", key, nd.id, err)
			}
		}
	}
	l := startNetLoad(c, seeded, 6)
	defer func() {
		select {
		case <-l.stop:
		default:
			l.halt()
		}
	}()
	l.run(t, "healthy", 80)

	// One node cut off for longer than memberlist gossips to the dead
	// (30 s after the others declare it dead): the two sides must find
	// each other again by themselves.
	n1, n2, n3 := c.nodes[0], c.nodes[1], c.nodes[2]
	v1, v2 := randomBytes(31, 300<<10), randomBytes(32, 200<<10)
	c.putVia(n1, netFixedBucket, "replaced", v1)
	c.awaitRead(n3, netFixedBucket, "replaced", v1) // n3 caches it for good (immutable)
	c.cut(n3)
	l.run(t, "node cut off", 60)
	l.setPhase("node cut off, converging")
	c.converge(2)
	l.setPhase("node cut off, seen dead")
	c.putVia(n1, netFixedBucket, "replaced", v2) // n3 misses the forget
	l.hold(t, 35*time.Second)
	c.heal(n3)
	l.setPhase("healing")
	c.converge(3)
	c.awaitRead(n3, netFixedBucket, "replaced", v2) // told what it missed
	l.run(t, "healed", 60)

	c.origin.Cut(t)
	l.run(t, "origin cut off", 80)
	c.origin.Heal(t)
	l.setPhase("origin back, breaker closing")
	c.awaitOrigin()
	l.run(t, "origin back", 40)

	c.pause(n2)
	l.run(t, "node hung (SIGSTOP)", 60)
	c.resume(n2)
	l.setPhase("hung node resumed, converging")
	c.converge(3)
	l.run(t, "hung node resumed", 40)

	c.kill(n3)
	l.run(t, "node killed", 40)
	l.setPhase("node killed, converging")
	c.converge(2)
	c.listsDead(c.nodes[0], n3)
	c.start(n3) // an empty disk
	l.setPhase("node back, empty disk, converging")
	c.converge(3)
	l.run(t, "node back, empty disk", 60)

	c.add()
	l.setPhase("fourth node joining")
	c.converge(4)
	l.run(t, "four nodes", 40)
	l.halt()

	l.report(t, func(string) bool { return true })
	l.verifyAcked(t)
	c.converge(4)
	c.checkPlacement(seeded)
	c.stopAll()
}

// checkPlacement reads each seeded object through every node and checks
// that every node then holds at least the bytes of the chunks the ring of
// all members gives it (read-through data has one owner per chunk): after
// all the faults, an owner that lacked a chunk (it joined, or came back
// empty) took it when asked, from a former owner or the origin. (Chunks
// move on demand, not by rebalancing: an old owner that still holds a
// chunk serves it until it is evicted.)
func (c *netCluster) checkPlacement(seeded map[string][32]byte) {
	c.t.Helper()
	var ids []string
	for _, nd := range c.nodes {
		ids = append(ids, nd.id)
	}
	ring, err := cluster.NewRing(ids)
	if err != nil {
		c.t.Fatal(err)
	}
	ctx := context.Background()
	node, err := (&clientFlags{endpoint: "http://" + c.nodes[0].addr}).Remote(envMap(c.env))
	if err != nil {
		c.t.Fatal(err)
	}
	for key := range seeded {
		for _, nd := range c.nodes {
			c.awaitRead(nd, netDataBucket, key, nil) // any bytes: checked throughout
		}
		info, err := c.direct.StatObject(ctx, netDataBucket, key, minio.StatObjectOptions{})
		if err != nil {
			c.t.Fatal(err)
		}
		owed := map[string]int64{}
		for off := int64(0); off < info.Size; off += netChunk {
			owner := ring.Owners(cluster.ChunkKey(netDataBucket, key, off/netChunk), 1)[0]
			owed[owner] += min(netChunk, info.Size-off)
		}
		resp, err := adminCall(ctx, envMap(c.env), node, "GET", "/_granary/status", url.Values{"bucket": {netDataBucket}, "key": {key}})
		if err != nil {
			c.t.Fatal(err)
		}
		var cs api.ClusterStatus
		err = json.NewDecoder(resp.Body).Decode(&cs)
		resp.Body.Close()
		if err != nil {
			c.t.Fatal(err)
		}
		for _, m := range cs.Nodes {
			var doc struct {
				Object struct {
					Held int64 `json:"heldBytes"`
				} `json:"object"`
			}
			if m.Healthy && json.Unmarshal(m.Status, &doc) != nil {
				c.t.Fatalf("status of %s from %s: %s", key, m.ID, m.Status)
			}
			if doc.Object.Held < owed[m.ID] {
				c.t.Errorf("%s: %s holds %d bytes, but owns chunks of %d", key, m.ID, doc.Object.Held, owed[m.ID])
			}
		}
	}
}

// awaitOrigin waits until every node that is up reports the origin up
// with its breaker closed.
func (c *netCluster) awaitOrigin() {
	c.t.Helper()
	waitFor(c.t, 3*time.Minute, "every node sees the origin up after it came back", func() bool {
		for _, nd := range c.nodes {
			if !nd.up {
				continue
			}
			cs, err := c.status(nd)
			if err != nil {
				return false
			}
			for _, m := range cs.Nodes {
				var doc struct {
					Origin struct{ State, Breaker string }
				}
				if m.ID != cs.Self {
					continue
				}
				if json.Unmarshal(m.Status, &doc) != nil || doc.Origin.State != "up" || doc.Origin.Breaker != "closed" {
					return false
				}
			}
		}
		return true
	})
}

// putVia writes data as bucket/key through nd.
func (c *netCluster) putVia(nd *netNode, bucket, key string, data []byte) {
	c.t.Helper()
	if _, err := nd.client.PutObject(context.Background(), bucket, key, bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{}); err != nil {
		c.t.Fatalf("put %s/%s through %s: %v", bucket, key, nd.id, err)
	}
}

// awaitRead waits (bounded) until bucket/key reads as want through nd
// (nil want: reads whole, any bytes).
func (c *netCluster) awaitRead(nd *netNode, bucket, key string, want []byte) {
	c.t.Helper()
	var got []byte
	waitFor(c.t, time.Minute, fmt.Sprintf("%s/%s through %s reads as written", bucket, key, nd.id), func() bool {
		obj, err := nd.client.GetObject(context.Background(), bucket, key, minio.GetObjectOptions{})
		if err != nil {
			return false
		}
		defer obj.Close()
		got, err = io.ReadAll(obj)
		return err == nil && (want == nil || bytes.Equal(got, want))
	})
}

// listsDead checks that nd's status lists dead, unhealthy: members that
// died are remembered.
func (c *netCluster) listsDead(nd, dead *netNode) {
	c.t.Helper()
	cs, err := c.status(nd)
	if err != nil {
		c.t.Fatal(err)
	}
	for _, m := range cs.Nodes {
		if m.ID == dead.id {
			if m.Healthy || m.Addr != dead.addr {
				c.t.Fatalf("%s lists the dead %s as %+v", nd.id, dead.id, m)
			}
			return
		}
	}
	c.t.Fatalf("%s does not list the dead member %s: %+v", nd.id, dead.id, cs.Nodes)
}

// stopAll stops every node with SIGTERM and checks each exits cleanly (a
// data race in these -race children exits otherwise).
func (c *netCluster) stopAll() {
	for _, nd := range c.nodes {
		nd.child.stop(c.t)
	}
}
