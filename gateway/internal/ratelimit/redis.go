package ratelimit

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// gcraScript runs GCRA atomically in Redis on the server's clock, so replicas with
// skewed clocks still share one limit. It returns {allowed, tat - now} in microseconds.
var gcraScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
local nxt = tat + interval
if nxt - now > window then
  return {0, tat - now}
end
redis.call('SET', KEYS[1], nxt, 'PX', math.ceil((nxt - now) / 1000) + 1)
return {1, nxt - now}
`)

// Shared limits through Redis when several gateway replicas run, and falls back to the
// replica's own Local limiter when Redis is unreachable or slow (fail open: the API
// stays up; the bound is documented in docs/rate-limiting.md).
type Shared struct {
	client   redis.UniversalClient
	local    *Local
	timeout  time.Duration
	log      *slog.Logger
	failures prometheus.Counter
	lastLog  atomic.Int64
	// retryAt (Unix nanoseconds) is when to ask Redis again after it failed.
	retryAt atomic.Int64
	// Metrics, optional, count the decisions and time the round trips to Redis.
	Metrics *Metrics
}

// RedisPause is how long a replica decides alone, without asking Redis, after Redis
// failed or was slow: then a few checks a second, not every request, wait for the
// timeout while Redis hangs. It is short because each later check also clears one of
// the pool's connections that a restart of Redis broke: the shared limit is back within
// a second or two of Redis.
const RedisPause = 200 * time.Millisecond

// NewShared returns a Redis-backed limiter with a local fallback.
func NewShared(client redis.UniversalClient, local *Local, timeout time.Duration, log *slog.Logger, reg prometheus.Registerer) *Shared {
	s := &Shared{client: client, local: local, timeout: timeout, log: log,
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gateway_ratelimit_redis_failures_total",
			Help: "Rate-limit checks decided locally because Redis failed or was slow (fail open).",
		})}
	if reg != nil {
		reg.MustRegister(s.failures)
	}
	return s
}

// Allow implements Limiter.
func (s *Shared) Allow(ctx context.Context, key string, p Policy) Decision {
	start := time.Now()
	if start.UnixNano() < s.retryAt.Load() {
		return s.fallback(ctx, key, p, nil) // Redis failed a moment ago
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	interval := p.interval().Microseconds()
	window := p.Window.Microseconds()
	res, err := gcraScript.Run(ctx, s.client, []string{"ratelimit:" + key}, interval, window).Int64Slice()
	s.Metrics.redisTook(time.Since(start))
	if err != nil || len(res) != 2 {
		s.retryAt.Store(time.Now().Add(RedisPause).UnixNano())
		return s.fallback(ctx, key, p, err)
	}
	ahead := time.Duration(res[1]) * time.Microsecond
	s.local.Sync(key, ahead)
	if res[0] == 0 {
		s.Metrics.count(byRedis, false)
		w, t := p.Window, p.interval()
		return Decision{Allowed: false, Limit: p.Limit, ResetAfter: ahead, RetryAfter: ahead - (w - t)}
	}
	s.Metrics.count(byRedis, true)
	return Decision{Allowed: true, Limit: p.Limit, ResetAfter: ahead,
		Remaining: int((p.Window - ahead) / p.interval())}
}

// fallback decides locally because Redis failed (err) or failed a moment ago (nil).
func (s *Shared) fallback(ctx context.Context, key string, p Policy, err error) Decision {
	s.failures.Inc()
	if now := time.Now().UnixNano(); err != nil && now-s.lastLog.Load() > int64(10*time.Second) {
		s.lastLog.Store(now)
		s.log.Warn("rate limit: Redis unavailable, deciding locally", slog.Any("error", err),
			slog.Duration("retry_in", RedisPause))
	}
	d := s.local.Allow(ctx, key, p)
	s.Metrics.count(byFallback, d.Allowed)
	return d
}
