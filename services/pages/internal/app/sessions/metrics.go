package sessions

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/customerapi/platform/services/pages/internal/domain/session"
)

// Metrics are the session worker's Prometheus metrics.
type Metrics struct {
	computedTotal *prometheus.CounterVec
	failures      prometheus.Counter
}

// NewMetrics registers the session worker's metrics on r.
func NewMetrics(r prometheus.Registerer) *Metrics {
	c := &Metrics{
		computedTotal: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pages_sessions_computed_total",
			Help: "Audience sessions whose derived metrics were computed, by outcome (completed, failed)."}, []string{"status"}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{Name: "pages_sessions_compute_errors_total",
			Help: "Runs of the session computation that failed (database errors); retried with backoff."}),
	}
	r.MustRegister(c.computedTotal, c.failures)
	return c
}

func (c *Metrics) computed(done session.Computed) {
	if c != nil {
		c.computedTotal.WithLabelValues(session.ComputationCompleted).Add(float64(done.Completed))
		c.computedTotal.WithLabelValues(session.ComputationFailed).Add(float64(done.Failed))
	}
}

func (c *Metrics) failed() {
	if c != nil {
		c.failures.Inc()
	}
}
