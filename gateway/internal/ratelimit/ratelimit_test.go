package ratelimit

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"
)

func TestGCRA(t *testing.T) {
	p := Policy{Limit: 5, Window: 10 * time.Second}
	var tat int64
	now := time.Unix(1000, 0).UnixNano()
	var d Decision
	// A fresh key gets exactly Limit quick successes, remaining counting down.
	for i := 0; i < 5; i++ {
		tat, d = gcra(tat, now, p)
		if !d.Allowed || d.Remaining != 4-i {
			t.Fatalf("request %d: %+v", i+1, d)
		}
	}
	tat, d = gcra(tat, now, p)
	if d.Allowed || d.RetryAfter != 2*time.Second || d.ResetAfter != 10*time.Second {
		t.Fatalf("6th request: %+v", d)
	}
	// One interval later exactly one more request fits.
	now += int64(2 * time.Second)
	tat, d = gcra(tat, now, p)
	if !d.Allowed || d.Remaining != 0 {
		t.Fatalf("after one interval: %+v", d)
	}
	_, d = gcra(tat, now, p)
	if d.Allowed {
		t.Fatalf("second request after one interval allowed: %+v", d)
	}
	// After a whole window the burst is back.
	now += int64(10 * time.Second)
	_, d = gcra(tat, now, p)
	if !d.Allowed || d.Remaining != 4 {
		t.Fatalf("after a window: %+v", d)
	}
}

func TestGCRANoWindowEdgeBurst(t *testing.T) {
	// 100/s: however requests are timed, no 1-second span sees more than 100 + 100.
	p := Policy{Limit: 100, Window: time.Second}
	var tat int64
	start := time.Unix(0, 0).UnixNano()
	allowed := 0
	for ms := 0; ms < 2000; ms++ {
		now := start + int64(ms)*int64(time.Millisecond)
		for i := 0; i < 10; i++ {
			var d Decision
			tat, d = gcra(tat, now, p)
			if d.Allowed {
				allowed++
			}
		}
	}
	// Burst of 100 plus refill of 100/s over 2 s.
	if allowed < 295 || allowed > 301 {
		t.Fatalf("allowed %d over 2s, want ~300", allowed)
	}
}

func TestLocalPerKeyAndPrune(t *testing.T) {
	l := NewLocal()
	clock := time.Unix(100, 0)
	l.now = func() time.Time { return clock }
	p := Policy{Limit: 2, Window: time.Second}
	ctx := context.Background()
	for i, want := range []bool{true, true, false} {
		if got := l.Allow(ctx, "a", p).Allowed; got != want {
			t.Fatalf("key a, request %d of a 2-per-second policy: allowed=%v, want %v", i+1, got, want)
		}
	}
	if !l.Allow(ctx, "b", p).Allowed {
		t.Fatal("key b is limited by key a")
	}
	clock = clock.Add(2 * time.Second)
	l.Prune()
	n := 0
	for i := range l.shards {
		n += len(l.shards[i].tat)
	}
	if n != 0 {
		t.Fatalf("%d keys kept after their allowance refilled", n)
	}
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestSharedAcrossReplicas(t *testing.T) {
	mr := miniredis.RunT(t)
	p := Policy{Limit: 5, Window: 10 * time.Second}
	ctx := context.Background()
	replica := func() *Shared {
		c := redis.NewClient(&redis.Options{Addr: mr.Addr()})
		t.Cleanup(func() { c.Close() })
		return NewShared(c, NewLocal(), time.Second, quiet(), nil)
	}
	a, b := replica(), replica()
	allowed := 0
	for i := 0; i < 10; i++ {
		r := a
		if i%2 == 1 {
			r = b
		}
		if r.Allow(ctx, "k", p).Allowed {
			allowed++
		}
	}
	if allowed != 5 {
		t.Fatalf("two replicas allowed %d requests together, want 5", allowed)
	}
	d := a.Allow(ctx, "k", p)
	if d.Allowed || d.RetryAfter <= 0 || d.RetryAfter > 2*time.Second {
		t.Fatalf("denied decision = %+v", d)
	}
}

func TestSharedFailsOpenToLocal(t *testing.T) {
	mr := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: mr.Addr(), MaxRetries: -1})
	defer c.Close()
	reg := prometheus.NewRegistry()
	s := NewShared(c, NewLocal(), 200*time.Millisecond, quiet(), reg)
	p := Policy{Limit: 3, Window: 10 * time.Second}
	ctx := context.Background()
	if !s.Allow(ctx, "k", p).Allowed {
		t.Fatal("first request denied")
	}
	mr.Close() // Redis goes away
	// The local limiter continues from the shared state: 2 more, then denied.
	got := []bool{s.Allow(ctx, "k", p).Allowed, s.Allow(ctx, "k", p).Allowed, s.Allow(ctx, "k", p).Allowed}
	if !got[0] || !got[1] || got[2] {
		t.Fatalf("fallback decisions = %v, want [true true false]", got)
	}
	if n := testutil.ToFloat64(s.failures); n != 3 {
		t.Fatalf("failures metric = %v, want 3", n)
	}
}
