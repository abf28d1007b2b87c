// The schedule of the reads scenario's passes.
package main

import (
	"slices"
	"testing"
)

// TestScheduleReadsEachCacheInTheSameOrder: nginx and granary are each
// read cold, then unsigned, then signed, so that each cache's first warm
// pass is compared with the other's.
func TestScheduleReadsEachCacheInTheSameOrder(t *testing.T) {
	lineup := []target{
		{name: "minio", targetKind: kindMinio},
		{name: "trivial", targetKind: kindTrivial},
		{name: "nginx", targetKind: kindNginx},
		{name: nginxSigned, targetKind: kindNginxSigned},
		{name: "granary", targetKind: kindGranary},
		{name: granaryUnsigned, targetKind: kindGranaryUnsigned},
	}
	var got []string
	for _, st := range schedule(lineup) {
		if lineup[st.target].name != st.label && !slices.Contains(passes(lineup[st.target]), st.label) {
			t.Errorf("step %+v: not a pass of %s", st, lineup[st.target].name)
		}
		got = append(got, st.label)
	}
	want := []string{"minio", "trivial", "nginx cold", "nginx warm", nginxSigned, "granary cold", granaryUnsigned, "granary warm"}
	if !slices.Equal(got, want) {
		t.Fatalf("schedule %q, want %q", got, want)
	}
	// Without granary, or with the lineup of an endpoint, each target's
	// passes in turn.
	got = got[:0]
	for _, st := range schedule(lineup[:4]) {
		got = append(got, st.label)
	}
	if want := want[:5]; !slices.Equal(got, want) {
		t.Fatalf("schedule without granary %q, want %q", got, want)
	}
}
