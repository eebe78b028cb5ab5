package ratelimit

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"
)

// Decisions are counted by who took them: Redis while it answers, the replica when it
// does not (fail open), and the replica alone when no Redis is configured.
func TestDecisionsAreCountedByDecider(t *testing.T) {
	mr := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: mr.Addr(), MaxRetries: -1})
	defer c.Close()
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	s := NewShared(c, NewLocal(), 200*time.Millisecond, quiet(), reg)
	s.Metrics = m
	p := Policy{Limit: 3, Window: 10 * time.Second}
	ctx := context.Background()
	s.Allow(ctx, "k", p)
	mr.Close()
	for i := 0; i < 3; i++ {
		s.Allow(ctx, "k", p) // allowed, allowed, limited: from the shared state
	}
	local := Counted{Local: NewLocal(), Metrics: m}
	local.Allow(ctx, "j", p)
	for by, want := range map[[2]int]float64{
		{byRedis, 1}: 1, {byRedis, 0}: 0, {byFallback, 1}: 2, {byFallback, 0}: 1, {byLocal, 1}: 1, {byLocal, 0}: 0,
	} {
		if got := testutil.ToFloat64(m.decisions[by[0]][by[1]]); got != want {
			t.Errorf("decisions[%s][allowed=%d] = %v, want %v", deciders[by[0]], by[1], got, want)
		}
	}
	if n := testutil.CollectAndCount(reg, "gateway_ratelimit_redis_duration_seconds"); n != 1 {
		t.Fatalf("redis round trips not timed")
	}
}

// After Redis failed (here: a server that accepts connections and never answers), a
// replica decides alone for RedisPause without asking it: one check pays the timeout,
// not every request of the outage.
func TestSharedPausesAfterAFailure(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never answered
		}
	}()
	c := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), MaxRetries: -1, ContextTimeoutEnabled: true})
	defer c.Close()
	s := NewShared(c, NewLocal(), 100*time.Millisecond, quiet(), nil)
	p := Policy{Limit: 1000, Window: time.Second}
	ctx := context.Background()
	start := time.Now()
	if !s.Allow(ctx, "k", p).Allowed {
		t.Fatal("denied")
	}
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Fatalf("the first check took %s: it should have waited for Redis's timeout", d)
	}
	start = time.Now()
	for i := 0; i < 50; i++ {
		s.Allow(ctx, "k", p)
	}
	if d := time.Since(start); d > 50*time.Millisecond {
		t.Fatalf("50 checks right after a failure took %s: they must not wait for Redis again", d)
	}
	if n := testutil.ToFloat64(s.failures); n != 51 {
		t.Fatalf("failures = %v, want 51 (every check decided locally)", n)
	}
}
