// A cold read whose chunk the full tiers decline still costs one origin
// read.
package gateway

import (
	"bytes"
	"fmt"
	"testing"
)

// TestDeclinedChunkFetchedOnce: a cold read whose chunk the full tiers
// decline (they hold more popular chunks) still costs one origin read:
// the reader takes the bytes of the metadata load's flight.
func TestDeclinedChunkFetchedOnce(t *testing.T) {
	r := newRig(t, rigOptions{chunk: 64 << 10, capacity: 2 << 20})
	for i := range 40 { // more than the tiers hold, each read three times
		k := fmt.Sprintf("hot/%d", i)
		r.seed(k, randBytes(t, 60<<10))
		for range 3 {
			r.read(k, nil)
		}
	}
	cold := map[string][]byte{}
	for i := range 20 {
		k := fmt.Sprintf("cold/%d", i)
		cold[k] = randBytes(t, 60<<10)
		r.seed(k, cold[k])
	}
	gets := r.originGets()
	for k, want := range cold {
		if got := r.read(k, nil); !bytes.Equal(got, want) {
			t.Fatalf("%s: %d bytes", k, len(got))
		}
	}
	if n := r.originGets() - gets; n != len(cold) {
		t.Fatalf("%d origin reads for %d cold objects", n, len(cold))
	}
	if r.ram.Stats().Declined == 0 {
		t.Fatal("the RAM tier declined nothing: the test exercised no decline")
	}
}
