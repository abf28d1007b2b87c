// The intent a flight carries as requests join it.
package gateway

import "testing"

func TestIntentJoined(t *testing.T) {
	for _, c := range []struct {
		start, join, want intent
	}{
		{wantNow, wantNow, wantNow},
		{wantNow, wantAhead, wantNow}, // a read-ahead joining changes nothing
		{wantAhead, wantKept, wantAhead | wantKept},
		{wantNow, wantWrite, wantWrite}, // a write fill joining a reader's flight
		{wantAsked, wantKept, wantAsked | wantKept},
		{wantNow, wantAsked, wantNow}, // only the starter is asked
		{wantKept, wantNow, wantKept}, // kept stays kept
	} {
		if got := c.start.joined(c.join); got != c.want {
			t.Errorf("%05b joined by %05b = %05b, want %05b", c.start, c.join, got, c.want)
		}
	}
	if !wantWrite.has(wantKept) || !wantWrite.has(wantWritten) || wantKept.has(wantWritten) {
		t.Error("wantWrite is not kept and written")
	}
}
