// Package metrics holds the delivery engine's Prometheus metrics (domain.EngineMetrics)
// and the queue gauges read from the database at scrape time.
package metrics

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/customerapi/platform/services/webhooks/internal/domain"
)

// Engine holds the delivery engine's Prometheus metrics.
type Engine struct {
	attempts   *prometheus.CounterVec
	deliveries *prometheus.CounterVec
	duration   prometheus.Histogram
	claims     prometheus.Histogram
	inFlight   prometheus.Gauge
	disabled   *prometheus.CounterVec
}

// New registers the engine's metrics on r. stats feeds the queue gauges, read at
// scrape time (they describe the shared database, so every replica reports the same).
func New(r prometheus.Registerer, stats func(context.Context) (domain.QueueStats, error), log *slog.Logger) *Engine {
	m := &Engine{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "webhook_delivery_attempts_total",
			Help: "Delivery attempts by result: success, http_error, timeout, network_error, refused (SSRF guard)."},
			[]string{"result"}),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "webhook_deliveries_total",
			Help: "Delivery outcomes after an attempt: succeeded, retry_scheduled, failed (schedule exhausted, 410, or subscription inactive)."},
			[]string{"outcome"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "webhook_delivery_attempt_duration_seconds",
			Help:    "Duration of delivery attempts, from sending the request to reading the answer.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}}),
		claims: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "webhook_claim_duration_seconds",
			Help:    "Duration of the claim queries that lease due deliveries (one round trip each).",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1}}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{Name: "webhook_delivery_attempts_in_flight",
			Help: "Attempts this replica is making right now."}),
		disabled: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "webhook_subscriptions_disabled_total",
			Help: "Subscriptions the platform disabled, by reason: gone (410) or failing."}, []string{"reason"}),
	}
	for _, o := range []string{"succeeded", "retry_scheduled", "failed"} {
		m.deliveries.WithLabelValues(o)
	}
	for _, r := range []string{"gone", "failing"} { // at 0 from the start, for dashboards
		m.disabled.WithLabelValues(r)
	}
	r.MustRegister(m.attempts, m.deliveries, m.duration, m.claims, m.inFlight, m.disabled,
		&queueCollector{stats: stats, log: log})
	return m
}

// Claimed implements domain.EngineMetrics.
func (m *Engine) Claimed(seconds float64) { m.claims.Observe(seconds) }

// InFlight implements domain.EngineMetrics.
func (m *Engine) InFlight(n int) { m.inFlight.Add(float64(n)) }

// Attempted implements domain.EngineMetrics.
func (m *Engine) Attempted(result string, seconds float64) {
	m.attempts.WithLabelValues(result).Inc()
	m.duration.Observe(seconds)
}

// Delivered implements domain.EngineMetrics.
func (m *Engine) Delivered(outcome string) { m.deliveries.WithLabelValues(outcome).Inc() }

// Disabled implements domain.EngineMetrics.
func (m *Engine) Disabled(reason string) { m.disabled.WithLabelValues(reason).Inc() }

var (
	depthDesc = prometheus.NewDesc("webhook_queue_depth",
		"Pending deliveries: due, being attempted, or waiting for a retry.", nil, nil)
	oldestDesc = prometheus.NewDesc("webhook_oldest_pending_age_seconds",
		"Age of the oldest pending delivery (0 when none).", nil, nil)
	lagDesc = prometheus.NewDesc("webhook_dispatch_lag_seconds",
		"How long the earliest due delivery has waited for a worker (0 when none waits).", nil, nil)
)

// queueCollector reads the queue gauges from the database when scraped.
type queueCollector struct {
	stats func(context.Context) (domain.QueueStats, error)
	log   *slog.Logger
}

// Describe implements prometheus.Collector.
func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- depthDesc
	ch <- oldestDesc
	ch <- lagDesc
}

// Collect implements prometheus.Collector.
func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	st, err := c.stats(ctx)
	if err != nil {
		c.log.Warn("queue metrics unavailable", slog.Any("error", err))
		return
	}
	ch <- prometheus.MustNewConstMetric(depthDesc, prometheus.GaugeValue, float64(st.Pending))
	ch <- prometheus.MustNewConstMetric(oldestDesc, prometheus.GaugeValue, st.OldestPendingAge.Seconds())
	ch <- prometheus.MustNewConstMetric(lagDesc, prometheus.GaugeValue, st.DispatchLag.Seconds())
}
