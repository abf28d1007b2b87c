// The write-back backlog call: figures read from the log's metrics, and
// Enabled false on a node without a log.
package api

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/granary-dev/granary/gateway"
)

func TestWriteBackOf(t *testing.T) {
	reg := prometheus.NewRegistry()
	gauge := func(name string, v float64) {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: name})
		g.Set(v)
		reg.MustRegister(g)
	}
	gauge("granary_writeback_dirty_bytes", 3<<20)
	gauge("granary_writeback_dirty_objects", 2)
	gauge("granary_writeback_dirty_limit_bytes", 64<<20)
	uploads := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "granary_writeback_uploads_total", Help: "u"}, []string{"result"})
	uploads.WithLabelValues("ok").Add(5)
	uploads.WithLabelValues("failed").Add(3)
	reg.MustRegister(uploads)
	want := WriteBackAnswer{Enabled: true, DirtyBytes: 3 << 20, DirtyObjects: 2, LimitBytes: 64 << 20, Uploads: 5, FailedUploads: 3}
	if got := writeBackOf(reg); got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if got := writeBackOf(prometheus.NewRegistry()); got != (WriteBackAnswer{}) {
		t.Fatalf("without a log: %+v", got)
	}
}

func TestAdminWriteBackRoute(t *testing.T) {
	base, root := openFS(t)
	e := newEnvOver(t, gateway.Options{Origin: base}, root, nil)
	resp, body := e.do(t, rawRequest{method: http.MethodGet, path: "/_granary/writeback"})
	var got WriteBackAnswer
	if resp.StatusCode != 200 || json.Unmarshal(body, &got) != nil || got.Enabled {
		t.Fatalf("writeback: %d %s", resp.StatusCode, body)
	}
	resp, body = e.do(t, rawRequest{method: http.MethodGet, path: "/_granary/writeback", unsigned: true})
	if code := errorCode(t, body); resp.StatusCode != 403 || code != "AccessDenied" {
		t.Fatalf("unsigned: %d %s", resp.StatusCode, body)
	}
}
