package app

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the processing worker's Prometheus metrics.
type Metrics struct {
	outcomes *prometheus.CounterVec
	queue    prometheus.Histogram
}

// NewMetrics registers the worker's metrics on r (shared by the workers of a replica).
func NewMetrics(r prometheus.Registerer) *Metrics {
	m := &Metrics{
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pages_version_processing_total",
			Help: "Version processing outcomes: published, draft, cancelled, failed (retried after the lease), taken_over (lease lost), gave_up (attempts exhausted)."},
			[]string{"outcome"}),
		queue: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "pages_version_queue_seconds",
			Help:    "Time from queuedAt until a worker first took a version.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}}),
	}
	for _, o := range []string{"published", "draft", "cancelled", "failed", "taken_over", "gave_up"} {
		m.outcomes.WithLabelValues(o)
	}
	r.MustRegister(m.outcomes, m.queue)
	return m
}

func (m *Metrics) outcome(o string) {
	if m != nil {
		m.outcomes.WithLabelValues(o).Inc()
	}
}

func (m *Metrics) queued(ms *float64) {
	if m != nil && ms != nil {
		m.queue.Observe(*ms / 1000)
	}
}
