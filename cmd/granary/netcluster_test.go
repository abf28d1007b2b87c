// The cluster across real network faults (netcluster_rig_test.go): under
// a mixed load throughout (netcluster_load_test.go), one node is cut off
// and healed, the origin is cut off and comes back, a node hangs
// (SIGSTOP) and resumes, a node is killed and comes back with an empty
// disk, and a fourth node joins. No read may return wrong bytes, no
// request through a live node may outlast the bound its timeouts give,
// reads of the cached data set never fail, no acknowledged write is lost,
// and after each fault the cluster converges on one ring.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
)

func TestClusterAcrossNetworkFaults(t *testing.T) {
	c := startNetCluster(t, 3, "buckets:\n  "+netWBBucket+":\n    write-mode: write-back\n")
	seeded := seedNet(t, c, 24)
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
	n2, n3 := c.nodes[1], c.nodes[2]
	c.cut(n3)
	l.run(t, "node cut off", 60)
	l.setPhase("node cut off, converging")
	c.converge(2)
	l.setPhase("node cut off, seen dead")
	l.hold(t, 35*time.Second)
	c.heal(n3)
	l.setPhase("healing")
	c.converge(3)
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
	c.stopAll()
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

// stopAll stops every node with SIGTERM and checks each exits cleanly (a
// data race in these -race children exits otherwise).
func (c *netCluster) stopAll() {
	for _, nd := range c.nodes {
		nd.child.stop(c.t)
	}
}
