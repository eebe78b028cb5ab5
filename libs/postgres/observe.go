package postgres

import (
	"context"
	"sync"
	"time"

	"github.com/exaring/otelpgx"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/multitracer"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
)

// PoolMetrics are the Prometheus metrics of a process's connection pools, each told
// apart by its "pool" label (the database it serves). Make one per registry; Observe each
// pool's configuration before connecting, so that acquires are timed and queries traced,
// and Watch the pool once it exists, so that its statistics are read at every scrape.
type PoolMetrics struct {
	acquire *prometheus.HistogramVec
	waiting *prometheus.GaugeVec

	mu    sync.Mutex
	pools map[string]*pgxpool.Pool
}

// NewPoolMetrics registers the pool metrics on r.
func NewPoolMetrics(r prometheus.Registerer) *PoolMetrics {
	m := &PoolMetrics{
		acquire: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "pgxpool_acquire_duration_seconds",
			Help: "Time to acquire a connection from the pool (waiting included), by pool.",
			// An idle connection takes microseconds; a full pool makes callers wait for one.
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"pool"}),
		waiting: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "pgxpool_waiting_acquires",
			Help: "Acquires in progress now: callers waiting for a connection of the pool.",
		}, []string{"pool"}),
		pools: map[string]*pgxpool.Pool{},
	}
	r.MustRegister(m.acquire, m.waiting, (*poolCollector)(m))
	return m
}

// Observe adds to cfg, beside any tracer it already has, a tracer that times acquires
// for the metrics of the pool named name, and database spans (otelpgx) from tp. Spans
// are made only inside a recorded trace, so an unsampled request costs next to nothing.
func (m *PoolMetrics) Observe(cfg *pgxpool.Config, name string, tp trace.TracerProvider) {
	tracers := []pgx.QueryTracer{}
	if cfg.ConnConfig.Tracer != nil {
		tracers = append(tracers, cfg.ConnConfig.Tracer)
	}
	if tp != nil {
		tracers = append(tracers, otelpgx.NewTracer(otelpgx.WithTracerProvider(tp),
			otelpgx.WithMeterProvider(metricnoop.NewMeterProvider()),
			// The statement is the span's useful part; connection details are the same in every span.
			otelpgx.WithDisableConnectionDetailsInAttributes(),
			// The pool's acquire has its own metric; a span for each would double the spans.
			otelpgx.WithDisableAcquireTracer(),
			otelpgx.WithTracerAttributes(attribute.String("db.namespace", cfg.ConnConfig.Database))))
	}
	tracers = append(tracers, &acquireTracer{
		duration: m.acquire.WithLabelValues(name),
		waiting:  m.waiting.WithLabelValues(name),
	})
	cfg.ConnConfig.Tracer = multitracer.New(tracers...)
}

// Watch makes the pool's statistics part of every scrape.
func (m *PoolMetrics) Watch(name string, pool *pgxpool.Pool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pools[name] = pool
}

// acquireTracer times each Acquire and counts those in progress.
type acquireTracer struct {
	duration prometheus.Observer
	waiting  prometheus.Gauge
}

type acquireStartKey struct{}

// TraceQueryStart implements pgx.QueryTracer (multitracer wants one); it does nothing.
func (a *acquireTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}

// TraceQueryEnd implements pgx.QueryTracer; it does nothing.
func (a *acquireTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TraceAcquireStart implements pgxpool.AcquireTracer.
func (a *acquireTracer) TraceAcquireStart(ctx context.Context, _ *pgxpool.Pool, _ pgxpool.TraceAcquireStartData) context.Context {
	a.waiting.Inc()
	return context.WithValue(ctx, acquireStartKey{}, time.Now())
}

// TraceAcquireEnd implements pgxpool.AcquireTracer.
func (a *acquireTracer) TraceAcquireEnd(ctx context.Context, _ *pgxpool.Pool, _ pgxpool.TraceAcquireEndData) {
	a.waiting.Dec()
	if start, ok := ctx.Value(acquireStartKey{}).(time.Time); ok {
		a.duration.Observe(time.Since(start).Seconds())
	}
}

var (
	poolAcquired = prometheus.NewDesc("pgxpool_acquired_connections",
		"Connections of the pool in use now.", []string{"pool"}, nil)
	poolIdle = prometheus.NewDesc("pgxpool_idle_connections",
		"Idle connections of the pool now.", []string{"pool"}, nil)
	poolConstructing = prometheus.NewDesc("pgxpool_constructing_connections",
		"Connections of the pool being opened now.", []string{"pool"}, nil)
	poolMax = prometheus.NewDesc("pgxpool_max_connections",
		"Most connections the pool opens (pool_max_conns).", []string{"pool"}, nil)
	poolAcquires = prometheus.NewDesc("pgxpool_acquires_total",
		"Connections acquired from the pool.", []string{"pool"}, nil)
	poolEmptyAcquires = prometheus.NewDesc("pgxpool_empty_acquires_total",
		"Acquires that found no idle connection and had to wait for one to be opened or released.", []string{"pool"}, nil)
	poolCanceledAcquires = prometheus.NewDesc("pgxpool_canceled_acquires_total",
		"Acquires abandoned because their context ended first.", []string{"pool"}, nil)
	poolEmptyWait = prometheus.NewDesc("pgxpool_empty_acquire_wait_seconds_total",
		"Time spent by acquires that had to wait for a connection.", []string{"pool"}, nil)
)

// poolCollector reads the pools' statistics at scrape time.
type poolCollector PoolMetrics

// Describe implements prometheus.Collector.
func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{poolAcquired, poolIdle, poolConstructing, poolMax, poolAcquires,
		poolEmptyAcquires, poolCanceledAcquires, poolEmptyWait} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, pool := range c.pools {
		s := pool.Stat()
		gauge := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, name)
		}
		counter := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, name)
		}
		gauge(poolAcquired, float64(s.AcquiredConns()))
		gauge(poolIdle, float64(s.IdleConns()))
		gauge(poolConstructing, float64(s.ConstructingConns()))
		gauge(poolMax, float64(s.MaxConns()))
		counter(poolAcquires, float64(s.AcquireCount()))
		counter(poolEmptyAcquires, float64(s.EmptyAcquireCount()))
		counter(poolCanceledAcquires, float64(s.CanceledAcquireCount()))
		counter(poolEmptyWait, s.EmptyAcquireWaitTime().Seconds())
	}
}
