// The source ladder as a table: every purpose's plan and every flight's,
// spelled out, so a change to where a chunk is looked for, or in what
// order, is a visible diff here.
package gateway

import (
	"strings"
	"testing"
)

func (p plan) String() string {
	names := make([]string, len(p.rungs))
	for i, r := range p.rungs {
		names[i] = r.String()
	}
	s := strings.Join(names, " ")
	if p.records {
		s += " (records)"
	}
	return s
}

func TestLadders(t *testing.T) {
	// "|" is a pause: a reader pays for the chunk there, a warm-up
	// yields to writes.
	for _, c := range []struct {
		name string
		plan plan
		want string
	}{
		{"get", plans[forGet], "first ram | local tiers flight (records)"},
		{"retry", plans[forRetry], "tiers flight"},
		{"peer", plans[forPeer], "ram local load tiers flight (records)"},
		{"handoff", plans[forHandoff], "tiers"},
		{"warm", plans[forWarm], "tiers | tiers flight"},
		{"fill", plans[forFill], "tiers flight"},
		{"flight now", *flightPlan(wantNow), "tiers tee owners pending heirs origin"},
		{"flight ahead", *flightPlan(wantAhead), "tiers tee owners pending heirs origin"},
		{"flight asked", *flightPlan(wantAsked), "tiers tee pending heirs origin"},
		{"flight kept", *flightPlan(wantKept), "tiers tee pending origin"},
		{"flight written", *flightPlan(wantWrite), "tiers tee pending origin"},
		{"flight asked, kept", *flightPlan(wantAsked | wantKept), "tiers tee pending origin"},
	} {
		if got := c.plan.String(); got != c.want {
			t.Errorf("%s: plan %q, want %q", c.name, got, c.want)
		}
	}
	if len(plans) != int(forFill)+1 {
		t.Errorf("%d plans; the table lists %d", len(plans), forFill+1)
	}
}

// TestLadderEnds checks what the walker relies on: every plan that must
// yield a chunk ends at the flight rung (a flight's at the origin), and
// no rung lacks a name.
func TestLadderEnds(t *testing.T) {
	for p, pl := range plans {
		last := pl.rungs[len(pl.rungs)-1]
		if purpose(p) != forHandoff && last != rungFlight {
			t.Errorf("plan %d ends at %v, not the flight", p, last)
		}
	}
	for _, pl := range []*plan{&readFlight, &askedFlight, &keptFlight} {
		if last := pl.rungs[len(pl.rungs)-1]; last != rungOrigin {
			t.Errorf("flight plan %v ends at %v, not the origin", pl, last)
		}
	}
	for r := rungFirst; r <= rungOrigin; r++ {
		if r.String() == "" {
			t.Errorf("rung %d has no name", r)
		}
	}
}

func TestMetaLadders(t *testing.T) {
	for _, c := range []struct {
		had, owns, chunk bool
		want             string
	}{
		{had: true, want: "stat"},
		{had: true, owns: true, want: "stat"},
		{owns: true, chunk: true, want: "heir origin+chunk"},
		{owns: true, want: "heir stat"},
		{chunk: true, want: "owners+chunk"},
		{want: "owners"},
	} {
		var names []string
		for _, r := range metaPlan(c.had, c.owns, c.chunk) {
			names = append(names, r.String())
		}
		if got := strings.Join(names, " "); got != c.want {
			t.Errorf("had %v, owns %v, chunk %v: plan %q, want %q", c.had, c.owns, c.chunk, got, c.want)
		}
	}
}
