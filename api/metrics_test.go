// Tests of the request collectors.
package api

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestRequestCountersKeptPerOpAndStatus: the counters kept for 200s and
// 206s count under their own operation and status, as the ones looked up
// each time (any other status) do.
func TestRequestCountersKeptPerOpAndStatus(t *testing.T) {
	m, err := newMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []struct {
		op     op
		status int
		n      int
	}{{opGetObject, 200, 3}, {opGetObject, 206, 2}, {opGetObject, 404, 1}, {opHeadObject, 200, 4}} {
		for range o.n {
			m.observe(o.op, o.status, 0.001)
		}
	}
	for _, c := range []struct {
		op, code string
		want     float64
	}{{"GetObject", "200", 3}, {"GetObject", "206", 2}, {"GetObject", "404", 1}, {"HeadObject", "200", 4}, {"HeadObject", "206", 0}} {
		if got := testutil.ToFloat64(m.requests.WithLabelValues(c.op, c.code)); got != c.want {
			t.Errorf("requests{op=%s,code=%s} = %v, want %v", c.op, c.code, got, c.want)
		}
	}
}
