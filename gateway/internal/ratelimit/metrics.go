package ratelimit

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Who took a rate-limit decision: the replica alone (no Redis configured), Redis (shared
// by the replicas), or the replica alone because Redis failed or was slow (fail open).
const (
	byLocal = iota
	byRedis
	byFallback
)

var deciders = [...]string{byLocal: "local", byRedis: "redis", byFallback: "local_fallback"}

// Metrics count the rate-limit decisions (gateway_ratelimit_decisions_total{decided_by,
// result}) and time the Redis round trips. Every series exists from the start; a nil
// *Metrics counts nothing.
type Metrics struct {
	decisions [len(deciders)][2]prometheus.Counter
	redis     prometheus.Histogram
}

// NewMetrics registers the rate-limit metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gateway_ratelimit_decisions_total",
		Help: "Rate-limit decisions, by who took them (local: one replica, redis: shared, local_fallback: Redis failed or was slow) and result (allowed, limited).",
	}, []string{"decided_by", "result"})
	m := &Metrics{redis: prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "gateway_ratelimit_redis_duration_seconds",
		Help:    "Round trips of the shared rate-limit script to Redis, failed ones included (a timeout is RATE_LIMIT_REDIS_TIMEOUT).",
		Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25},
	})}
	reg.MustRegister(vec, m.redis)
	for by, name := range deciders {
		m.decisions[by][0] = vec.WithLabelValues(name, "limited")
		m.decisions[by][1] = vec.WithLabelValues(name, "allowed")
	}
	return m
}

func (m *Metrics) count(by int, allowed bool) {
	if m == nil {
		return
	}
	i := 0
	if allowed {
		i = 1
	}
	m.decisions[by][i].Inc()
}

func (m *Metrics) redisTook(d time.Duration) {
	if m != nil {
		m.redis.Observe(d.Seconds())
	}
}

// Counted is a replica's own limiter with its decisions counted as local ones.
type Counted struct {
	*Local
	Metrics *Metrics
}

// Allow implements Limiter.
func (c Counted) Allow(ctx context.Context, key string, p Policy) Decision {
	d := c.Local.Allow(ctx, key, p)
	c.Metrics.count(byLocal, d.Allowed)
	return d
}
