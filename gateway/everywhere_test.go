// Objects under an everywhere prefix in a cluster (Options.Everywhere):
// each chunk is read from the origin once, by its first owner; every
// member that reads it keeps it as its own and serves it from its tiers
// from then on, while the other objects stay sharded.
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

	readAll := func(key string, want []byte) {
		t.Helper()
		for i := range c.engines {
			got, err := c.read(i, key)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s through node %d: %d bytes, %v", key, i, len(got), err)
			}
			settle(t, c.engines[i])
		}
	}
	readAll("shared/val", shared)
	if n := c.originGets(); n != 6 {
		t.Fatalf("the shared object's 6 chunks took %d origin reads", n)
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
	before := calls()
	readAll("shared/val", shared)
	if n := calls() - before; n != 0 {
		t.Errorf("a second read through every member made %d chunk calls; each holds the object", n)
	}
	if n := c.originGets(); n != 6 {
		t.Errorf("a second read through every member read the origin %d more times", n-6)
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

	readAll("train/obj", sharded)
	if n := c.originGets(); n != 12 {
		t.Fatalf("the sharded object's 6 chunks took %d origin reads", n-6)
	}
	for idx, n := range held("train/obj") {
		if n != 1 {
			t.Errorf("sharded chunk %d is owned by %d members, want its one owner", idx, n)
		}
	}
}
