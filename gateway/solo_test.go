// A node on its own behind the cluster seam: it owns every chunk and has
// no member to ask, tell or hand off to.
package gateway

import (
	"testing"

	"github.com/granary-dev/granary/store"
)

func TestSoloOwnsEverything(t *testing.T) {
	r := newRig(t, rigOptions{chunk: 64 << 10})
	e := r.e
	if !e.peer.solo {
		t.Fatal("an engine without Peers is not solo")
	}
	for idx := range int64(4) {
		id := store.ChunkID{Bucket: r.bucket, Key: "k", ETag: "e", Index: idx}
		if mine, ask := e.chunkOwners(id); !mine || len(ask) != 0 {
			t.Errorf("chunk %d: mine %v, ask %v; want mine, nobody", idx, mine, ask)
		}
		if h := e.heirs(id); len(h) != 0 {
			t.Errorf("chunk %d: heirs %v", idx, h)
		}
		if w, ok := e.pendingWriter(id); ok {
			t.Errorf("chunk %d: pending writer %v", idx, w)
		}
	}
	if !e.ownsFirstChunk(r.bucket, "k") {
		t.Error("solo does not own a first chunk")
	}
	info := store.ObjectInfo{Bucket: r.bucket, Key: "k", ETag: "e", Size: 10}
	e.placeChunk(e.chunkID(info, 0), []byte("0123456789"), wantKept, false, nil)
	if _, err := r.ram.Get(e.chunkID(info, 0)); err != nil {
		t.Errorf("a chunk placed by a solo node is not in its RAM tier: %v", err)
	}
}
