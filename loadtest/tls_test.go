// Test of the tls scenario at a tiny size with a granary built from this
// tree: every row measured on both nodes over the right scheme, every
// byte read, and the report's summary and rounds.
package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

func TestTLSScenario(t *testing.T) {
	if testing.Short() {
		t.Skip("builds granary, starts MinIO and two nodes")
	}
	bin := granaryForTest(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p := tlsPlan{count: 40, sizes: []int{4 << 10, 100 << 10}, conc: 8, largeSize: 8 << 20, rounds: 2, ram: 256 << 20}
	var log bytes.Buffer
	rep, err := runTLSPlan(ctx, options{granary: bin}, p, &log)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	t.Log("\n" + rep.markdown())
	// Per round, on each node each set signed and unsigned and the
	// stream, on each nginx and Go server each set unsigned and the stream.
	if want := p.rounds * (2*(2*len(p.sizes)+1) + 4*(len(p.sizes)+1)); len(rep.rows) != want {
		t.Fatalf("%d rows, want %d", len(rep.rows), want)
	}
	for _, r := range rep.rows {
		want := p.largeSize
		if !r.large {
			want = int64(p.count) * int64(sizeOf(t, r.read))
		}
		if r.bytes != want || r.rate <= 0 || (!r.large && (r.p50 <= 0 || r.p99 < r.p50)) {
			t.Errorf("row %+v: want %d bytes read", r, want)
		}
	}
	if rep.seal <= 0 || rep.open <= 0 {
		t.Errorf("AES-GCM rates %.0f / %.0f MB/s", rep.seal, rep.open)
	}
	if !strings.HasPrefix(rep.negotiated, "TLS 1.3") {
		t.Errorf("negotiated %q, want TLS 1.3", rep.negotiated)
	}
	md := rep.markdown()
	for _, want := range []string{"| 40 x 4KiB, c=8 | signed |", "| 40 x 100KiB, c=8 | unsigned |", "| 8MiB, one stream | signed |",
		"| 40 x 4KiB, c=8 | unsigned | HTTPS | 2 |", ">= 0.8x", ">= 0.9x", "| 40 x 100KiB, c=8 | unsigned | nginx HTTPS | 2 |",
		"| 8MiB, one stream | unsigned | nginx HTTP | 1 |", "| 40 x 4KiB, c=8 | unsigned | Go HTTPS | 2 |",
		"| 8MiB, one stream | unsigned | Go HTTP | 1 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	// Each reference's table has a row per small set and the stream.
	for _, ref := range []string{"Against nginx proxy_cache:", "Against the Go ceiling"} {
		_, table, _ := strings.Cut(md, ref)
		_, table, _ = strings.Cut(table, "\n\n") // the table starts after its title
		table, _, _ = strings.Cut(table, "\n\n") // and ends at a blank line
		for _, want := range []string{"| 40 x 4KiB, c=8 | ", "| 40 x 100KiB, c=8 | ", "| 8MiB, one stream | "} {
			if !strings.Contains(table, want) {
				t.Errorf("the table %q lacks %q:\n%s", ref, want, md)
			}
		}
	}
}

// sizeOf is the object size a small read's name gives.
func sizeOf(t *testing.T, read string) int {
	for _, size := range []int{4 << 10, 100 << 10} {
		if strings.Contains(read, " x "+sizeName(int64(size))+",") {
			return size
		}
	}
	t.Fatalf("read %q names no size", read)
	return 0
}
