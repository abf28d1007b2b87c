// Test of the origin-faults scenario at a tiny size with a granary built
// from this tree: every phase read (every byte checked), misses refused
// with SlowDown once the breaker opened, recovery measured, and the
// report's tables.
package main

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestOriginFaultsScenario(t *testing.T) {
	if testing.Short() {
		t.Skip("builds granary, starts MinIO and a node")
	}
	bin := granaryForTest(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	p := faultsPlan{count: 40, size: 16 << 10, conc: 8, rounds: 1, misses: 10, ram: 128 << 20}
	var log bytes.Buffer
	rep, err := runOriginFaultsPlan(ctx, options{granary: bin}, p, &log)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	md := rep.markdown()
	t.Log("\n" + md)
	var names []string
	for _, ph := range rep.phases {
		names = append(names, ph.name)
		if len(ph.passes) != p.rounds || ph.passes[0].n != p.count {
			t.Errorf("phase %s: %+v", ph.name, ph.passes)
		}
		if faulty := ph.name == "hung" || ph.name == "refused"; faulty != (ph.missCodes != nil) ||
			(faulty && ph.missCodes[http.StatusServiceUnavailable] != p.misses) {
			t.Errorf("phase %s: misses %v, want %d x 503 in the faulty phases only", ph.name, ph.missCodes, p.misses)
		}
	}
	if got := strings.Join(names, ","); got != "healthy,hung,refused,back" {
		t.Fatalf("phases %s", got)
	}
	if rep.phases[1].breakerOpen <= 0 || rep.recovery <= 0 {
		t.Errorf("breaker open after %v, recovery %v", rep.phases[1].breakerOpen, rep.recovery)
	}
	for _, want := range []string{"| hung |", "| refused |", "| back |", "misses once open", "Recovery: a miss was served again"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}
