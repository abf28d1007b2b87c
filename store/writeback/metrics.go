// Prometheus metrics of the log: dirty bytes and objects, uploads by
// result, uploaded bytes and retries, uploads held for restores.
package writeback

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	uploads *prometheus.CounterVec // attempts, by result
	bytes   prometheus.Counter     // object bytes uploaded
	retries prometheus.Counter     // attempts after a failed one
	all     []prometheus.Collector
}

func newMetrics(l *Log) *metrics {
	m := &metrics{
		uploads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "granary_writeback_uploads_total", Help: "Upload attempts of write-back operations (puts and deletes), by result.",
		}, []string{"result"}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "granary_writeback_upload_bytes_total", Help: "Bytes of write-back objects uploaded to the origin.",
		}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "granary_writeback_retries_total", Help: "Upload attempts of write-back operations that follow a failed attempt.",
		}),
	}
	dirtyBytes := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "granary_writeback_dirty_bytes", Help: "Bytes staged (or of open uploads) and not yet at the origin.",
	}, func() float64 { return float64(l.Stats().DirtyBytes) })
	dirtyObjects := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "granary_writeback_dirty_objects", Help: "Write-back operations not yet at the origin.",
	}, func() float64 { return float64(l.Stats().DirtyObjects) })
	dirtyLimit := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "granary_writeback_dirty_limit_bytes", Help: "Dirty bytes past which writes get 503 SlowDown (--dirty-limit).",
	}, func() float64 { return float64(l.opts.DirtyLimit) })
	held := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "granary_writeback_uploads_held", Help: "Upload bodies waiting now for clients reading staged copies (a restore of what was just saved).",
	}, func() float64 { return float64(l.restores.waiting.Load()) })
	heldSeconds := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "granary_writeback_held_seconds_total", Help: "Seconds upload bodies waited for clients reading staged copies, summed over uploads.",
	}, func() float64 { return time.Duration(l.restores.held.Load()).Seconds() })
	m.all = []prometheus.Collector{m.uploads, m.bytes, m.retries, dirtyBytes, dirtyObjects, dirtyLimit, held, heldSeconds}
	return m
}

// register registers the collectors with reg (if set); on failure none
// stays registered.
func (m *metrics) register(reg prometheus.Registerer) error {
	if reg == nil {
		return nil
	}
	for i, c := range m.all {
		if err := reg.Register(c); err != nil {
			for _, done := range m.all[:i] {
				reg.Unregister(done)
			}
			return err
		}
	}
	return nil
}

// unregister removes the collectors from reg (if set), so a Log opened
// again may register its own.
func (m *metrics) unregister(reg prometheus.Registerer) {
	if reg == nil {
		return
	}
	for _, c := range m.all {
		reg.Unregister(c)
	}
}

func (m *metrics) uploadOK(o *op) {
	m.uploads.WithLabelValues("ok").Inc()
	if o.attempts > 0 {
		m.retries.Inc()
	}
	if o.Kind == kindPut {
		m.bytes.Add(float64(o.Info.Size))
	}
}

func (m *metrics) uploadFailed(o *op) {
	m.uploads.WithLabelValues("failed").Inc()
	if o.attempts > 1 {
		m.retries.Inc()
	}
}
