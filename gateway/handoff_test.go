// A hand-off across more than one membership change, through the fake
// cluster: a node that now owns a chunk it lacks asks each former owner
// for what it has cached, most likely first, before the origin.
package gateway

import (
	"testing"

	"github.com/granary-dev/granary/cluster"
)

func TestClusterHandOffAsksEveryFormerOwner(t *testing.T) {
	c := newFakeCluster(t, fakeClusterOptions{n: 3, owners: 1, chunk: 64 << 10})
	data := randBytes(t, 64<<10)
	newRigFor(t, c).seed("moved", data)
	held := c.chunkOwner("moved", 0) // caches the chunk once read
	c.wantRead(held, "moved", data, "first read")
	settle(t, c.engines[held])
	reader := (held + 1) % 3
	lacks := (held + 2) % 3
	// The ring changes so that reader owns everything; its heirs are a
	// member that never held the chunk, then the one that did.
	ring, err := cluster.NewRing([]string{c.members[reader].ID})
	if err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	c.ring = ring
	c.heirs = []cluster.Member{c.members[lacks], c.members[held]}
	c.mu.Unlock()
	gets := c.originGets()
	c.wantRead(reader, "moved", data, "after two changes")
	if n := c.originGets() - gets; n != 0 {
		t.Fatalf("the hand-off read the origin %d times; the second former owner had the chunk", n)
	}
	if c.count(reader, lacks, "get-cached") != 1 || c.count(reader, held, "get-cached") != 1 {
		t.Fatalf("cached-only asks: %d of the member that lacked it, %d of the one that held it; want 1 each",
			c.count(reader, lacks, "get-cached"), c.count(reader, held, "get-cached"))
	}
}
