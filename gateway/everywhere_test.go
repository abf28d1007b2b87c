// Objects under an everywhere prefix in a cluster (Options.Everywhere):
// each chunk is read from the origin once, by its first owner, which
// places it on every member, each keeping it as its own and serving it
// from its tiers; the other objects stay sharded.
package gateway

import (
	"bytes"
	"strings"
	"testing"

	"github.com/granary-dev/granary/store"
)

func TestClusterEverywherePrefixIsServedByEveryMember(t *testing.T) {
	// Hot tiers too small for a copy: what a member serves locally, it
	// owns.
	c := newFakeCluster(t, fakeClusterOptions{n: 3, owners: 1, chunk: 64 << 10, hot: 1,
		everywhere: func(_, key string) bool { return strings.HasPrefix(key, "shared/") }})
	shared, sharded := randBytes(t, 5*64<<10+100), randBytes(t, 5*64<<10+100) // 6 chunks each
	base := newRigFor(t, c)
	base.seed("shared/val", shared)
	base.seed("train/obj", sharded)

	readVia := func(key string, want []byte, nodes ...int) {
		t.Helper()
		for _, i := range nodes {
			got, err := c.read(i, key)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s through node %d: %d bytes, %v", key, i, len(got), err)
			}
		}
		for _, e := range c.engines {
			settle(t, e)
		}
	}
	calls := func() int { // chunk calls between members so far
		n := 0
		for i := range c.engines {
			for j := range c.engines {
				n += c.count(i, j, "get") + c.count(i, j, "first")
			}
		}
		return n
	}
	// One member reads it: every member then holds it.
	readVia("shared/val", shared, 0)
	if n := c.originGets(); n != 6 {
		t.Fatalf("the shared object's 6 chunks took %d origin reads", n)
	}
	before := calls()
	readVia("shared/val", shared, 1, 2)
	if n := calls() - before; n != 0 {
		t.Errorf("reads through the other members made %d chunk calls; each holds the object", n)
	}
	if n := c.originGets(); n != 6 {
		t.Errorf("reads through the other members read the origin %d more times", n-6)
	}
	held := func(key string) []int { // per chunk, the RAM tiers holding it as owned
		etag := etagOf(t, c, key)
		out := make([]int, 6)
		for idx := range out {
			for _, e := range c.engines {
				if _, err := e.opts.RAM.Get(store.ChunkID{Bucket: c.bucket, Key: key, ETag: etag, Index: int64(idx)}); err == nil {
					out[idx]++
				}
			}
		}
		return out
	}
	for idx, n := range held("shared/val") {
		if n != len(c.engines) {
			t.Errorf("shared chunk %d is owned by %d members, want all %d", idx, n, len(c.engines))
		}
	}

	readVia("train/obj", sharded, 0, 1, 2)
	if n := c.originGets(); n != 12 {
		t.Fatalf("the sharded object's 6 chunks took %d origin reads", n-6)
	}
	for idx, n := range held("train/obj") {
		if n != 1 {
			t.Errorf("sharded chunk %d is owned by %d members, want its one owner", idx, n)
		}
	}
}
