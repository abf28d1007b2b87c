// Metrics: dirty gauges and upload counters follow the log, and a closed
// log unregisters them so a reopened one can register again.
package writeback

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestMetrics(t *testing.T) {
	raw := s3Origin(t)
	b := newBucket(t, raw)
	g := newGate(raw, false)
	reg := prometheus.NewPedanticRegistry()
	dir := t.TempDir()
	l, err := Open(Options{Origin: g, Dir: dir, WriteBack: always, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	l.Start()
	data := payload(12345, 1)
	put(t, l, b, "k", data)
	gauge := func(name string) float64 {
		t.Helper()
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == name {
				return mf.GetMetric()[0].GetGauge().GetValue()
			}
		}
		t.Fatalf("no metric %s", name)
		return 0
	}
	if got := gauge("granary_writeback_dirty_bytes"); got != float64(len(data)) {
		t.Fatalf("dirty bytes gauge = %v, want %d", got, len(data))
	}
	if got := gauge("granary_writeback_dirty_objects"); got != 1 {
		t.Fatalf("dirty objects gauge = %v, want 1", got)
	}
	g.Open()
	flush(t, l, b)
	if got := gauge("granary_writeback_dirty_bytes"); got != 0 {
		t.Fatalf("dirty bytes gauge after the flush = %v", got)
	}
	if ok := testutil.ToFloat64(l.m.uploads.WithLabelValues("ok")); ok != 1 {
		t.Fatalf("uploads ok = %v, want 1", ok)
	}
	if n := testutil.ToFloat64(l.m.bytes); n != float64(len(data)) {
		t.Fatalf("upload bytes = %v, want %d", n, len(data))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2 := openLog(t, Options{Origin: raw, Dir: dir, Registerer: reg})
	if got := gauge("granary_writeback_dirty_objects"); got != 0 || l2.Stats().DirtyObjects != 0 {
		t.Fatalf("reopened log: gauge %v", got)
	}
}
