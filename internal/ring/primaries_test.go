package ring

import (
	"fmt"
	"testing"
)

// TestPartitionIsTheLibrarys: Partition and Primaries place every key on
// the primary Owners gives it, so a client holding them (a boto3 helper
// given GET /_granary/ring) places chunks as the nodes do.
func TestPartitionIsTheLibrarys(t *testing.T) {
	r, err := New([]string{"n1", "n2", "n3", "n4"})
	if err != nil {
		t.Fatal(err)
	}
	prim := r.Primaries()
	if len(prim) != defaultRingConfig.partitions {
		t.Fatalf("%d primaries, want one per partition (%d)", len(prim), defaultRingConfig.partitions)
	}
	for i := range 20000 {
		key := ChunkKey("bucket", fmt.Sprintf("train/shard-%05d.tar", i%5000), int64(i/5000))
		p := Partition(key, len(prim))
		if p != r.hash.FindPartitionID(key) {
			t.Fatalf("%q: partition %d, the library's %d", key, p, r.hash.FindPartitionID(key))
		}
		if got, want := prim[p], r.Owners(key, 1)[0]; got != want {
			t.Fatalf("%q: primary %s, Owners %s", key, got, want)
		}
	}
	if (&Ring{}).Primaries() != nil {
		t.Error("a ring of no members has primaries")
	}
}

func TestRoutable(t *testing.T) {
	for addr, want := range map[string]bool{"10.0.0.5:9000": true, "granary-0.granary-peers:9000": true, "[::1]:9000": true,
		"0.0.0.0:9000": false, "[::]:9000": false, ":9000": false, "no-port": false} {
		if got := Routable(addr); got != want {
			t.Errorf("Routable(%q) = %v, want %v", addr, got, want)
		}
	}
}
