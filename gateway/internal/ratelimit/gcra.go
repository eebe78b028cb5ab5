// Package ratelimit limits requests per API key with GCRA (the generic cell rate
// algorithm): one timestamp per key, smooth refill, no bursts at window edges. A policy
// of Limit requests per Window allows a burst of Limit at once and refills one request
// every Window/Limit.
package ratelimit

import (
	"context"
	"time"
)

// Policy is a limit of Limit requests per Window.
type Policy struct {
	Limit  int
	Window time.Duration
}

// interval is the refill time of one request.
func (p Policy) interval() time.Duration { return p.Window / time.Duration(p.Limit) }

// Decision is the outcome of one check.
type Decision struct {
	Allowed bool
	Limit   int
	// Remaining is how many more requests would be allowed right now.
	Remaining int
	// ResetAfter is the time until the full burst is available again.
	ResetAfter time.Duration
	// RetryAfter is, when denied, the time until one request will be allowed.
	RetryAfter time.Duration
}

// Limiter decides whether a request of key may pass under policy p.
type Limiter interface {
	Allow(ctx context.Context, key string, p Policy) Decision
}

// gcra is the algorithm itself. tat is the key's theoretical arrival time (zero for a
// fresh key); it returns the new tat and the decision. All times are nanoseconds.
func gcra(tat, now int64, p Policy) (int64, Decision) {
	t := int64(p.interval())
	w := int64(p.Window)
	if tat < now {
		tat = now
	}
	next := tat + t
	if next-now > w {
		// Denied: the request would exceed the burst. It fits once tat-now <= w-t.
		retry := tat - now - (w - t)
		return tat, Decision{Allowed: false, Limit: p.Limit, Remaining: 0,
			ResetAfter: time.Duration(tat - now), RetryAfter: time.Duration(retry)}
	}
	return next, Decision{Allowed: true, Limit: p.Limit,
		Remaining: int((w - (next - now)) / t), ResetAfter: time.Duration(next - now)}
}
