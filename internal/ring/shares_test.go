package ring

import (
	"fmt"
	"math"
	"testing"
)

// The shares are the primary owners' fractions of the keys: they add up
// to 1, each is near 1/N (the ring bounds loads), and they agree with
// where Owners sends keys.
func TestRingShares(t *testing.T) {
	if got := (&Ring{}).Shares(); got != nil {
		t.Fatalf("empty ring: %v", got)
	}
	ids := []string{"a", "b", "c"}
	r, err := New(ids)
	if err != nil {
		t.Fatal(err)
	}
	shares := r.Shares()
	var sum float64
	for _, id := range ids {
		if s := shares[id]; math.Abs(s-1.0/3) > 0.01 {
			t.Errorf("%s: share %.4f, want about 1/3", id, s)
		}
		sum += shares[id]
	}
	if math.Abs(sum-1) > 1e-9 || len(shares) != len(ids) {
		t.Fatalf("shares %v add up to %v", shares, sum)
	}
	const keys = 60000
	primaries := map[string]int{}
	for i := range keys {
		primaries[r.Owners(fmt.Appendf(nil, "key-%d", i), 1)[0]]++
	}
	for _, id := range ids {
		if got := float64(primaries[id]) / keys; math.Abs(got-shares[id]) > 0.02 {
			t.Errorf("%s: %.4f of keys, share says %.4f", id, got, shares[id])
		}
	}
}
