// The warm-up metrics.
package ops

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	running prometheus.Gauge
	objects *prometheus.CounterVec // by result: listed, fetched, cached, failed
	bytes   prometheus.Counter     // fetched by warm-ups
	jobs    *prometheus.CounterVec // finished, by state
}

func newMetrics() *metrics {
	return &metrics{
		running: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "granary_warm_jobs_running", Help: "Warm-up jobs running.",
		}),
		objects: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "granary_warm_objects_total",
			Help: "Objects seen by warm-ups: listed at the origin, fetched, already cached, failed.",
		}, []string{"result"}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "granary_warm_fetched_bytes_total", Help: "Bytes warm-ups brought into the cache.",
		}),
		jobs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "granary_warm_jobs_total", Help: "Warm-up jobs finished, by state.",
		}, []string{"state"}),
	}
}

func (m *metrics) register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.running, m.objects, m.bytes, m.jobs} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
