package app

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/customerapi/platform/services/pages/internal/domain"
)

// SessionCounters are the session worker's Prometheus metrics.
type SessionCounters struct {
	computedTotal *prometheus.CounterVec
	failures      prometheus.Counter
}

// NewSessionCounters registers the session worker's metrics on r.
func NewSessionCounters(r prometheus.Registerer) *SessionCounters {
	c := &SessionCounters{
		computedTotal: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pages_sessions_computed_total",
			Help: "Audience sessions whose derived metrics were computed, by outcome (completed, failed)."}, []string{"status"}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{Name: "pages_sessions_compute_errors_total",
			Help: "Runs of the session computation that failed (database errors); retried with backoff."}),
	}
	r.MustRegister(c.computedTotal, c.failures)
	return c
}

func (c *SessionCounters) computed(done domain.SessionsComputed) {
	if c != nil {
		c.computedTotal.WithLabelValues(domain.ComputationCompleted).Add(float64(done.Completed))
		c.computedTotal.WithLabelValues(domain.ComputationFailed).Add(float64(done.Failed))
	}
}

func (c *SessionCounters) failed() {
	if c != nil {
		c.failures.Inc()
	}
}
