// The origin's health metrics: up, breaker, failures by cause, timeouts
// and calls refused by the open breaker.
package guard

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	up, open prometheus.Gauge
	failures *prometheus.CounterVec
	timeouts prometheus.Counter
	rejected prometheus.Counter
}

func newMetrics() *metrics {
	return &metrics{
		up: prometheus.NewGauge(prometheus.GaugeOpts{Name: "granary_origin_up",
			Help: "1 while the origin answers (or was not asked yet), 0 while it is down."}),
		open: prometheus.NewGauge(prometheus.GaugeOpts{Name: "granary_origin_breaker_open",
			Help: "1 while the origin's circuit breaker is open: origin calls fail at once and a probe runs."}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "granary_origin_unreachable_total",
			Help: "Origin calls that found it unreachable, by cause (refused, timeout, dns, tls, reset, server error)."}, []string{"cause"}),
		timeouts: prometheus.NewCounter(prometheus.CounterOpts{Name: "granary_origin_timeouts_total",
			Help: "Origin calls that got no answer within the origin timeout."}),
		rejected: prometheus.NewCounter(prometheus.CounterOpts{Name: "granary_origin_rejected_total",
			Help: "Origin calls failed at once because the breaker was open."}),
	}
}

func (m *metrics) register(r prometheus.Registerer) error {
	m.up.Set(1)
	// Every cause's series exists from the start at 0, so a rate over it
	// (a dashboard, an alert) has something to start from.
	for _, c := range []string{CauseRefused, CauseTimeout, CauseDNS, CauseTLS, CauseReset, CauseServer, CauseDenied, CauseOther} {
		m.failures.WithLabelValues(c)
	}
	for _, c := range []prometheus.Collector{m.up, m.open, m.failures, m.timeouts, m.rejected} {
		if err := r.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// set shows state.
func (m *metrics) set(state string) {
	down := 0.0
	if state == StateDown {
		down = 1
	}
	m.up.Set(1 - down)
	m.open.Set(down)
}
