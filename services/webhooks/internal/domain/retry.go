package domain

import "time"

// DefaultSchedule is the production retry schedule after the first attempt (as Svix):
// about 27.5 hours in all.
var DefaultSchedule = []time.Duration{
	5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour,
}

// RetryPolicy decides when a failed delivery is tried again.
type RetryPolicy struct {
	// Schedule holds the waits before each retry; after the last, the delivery fails.
	Schedule []time.Duration
	// Jitter spreads each wait by ±Jitter (0.2 = ±20%), so retries of many deliveries
	// that failed together do not arrive together.
	Jitter float64
	// RetryAfterMin and RetryAfterMax bound a receiver's Retry-After.
	RetryAfterMin, RetryAfterMax time.Duration
}

// Next returns the wait before the next attempt of a delivery that has had step
// automatic retries, or false when the schedule is exhausted. retryAfter > 0 is the
// receiver's Retry-After (429 or 503), honoured within bounds instead of the schedule;
// rnd, in [0, 1), draws the jitter.
func (p RetryPolicy) Next(step int, retryAfter time.Duration, rnd float64) (time.Duration, bool) {
	if step < 0 || step >= len(p.Schedule) {
		return 0, false
	}
	if retryAfter > 0 {
		return min(max(retryAfter, p.RetryAfterMin), p.RetryAfterMax), true
	}
	d := p.Schedule[step]
	return time.Duration(float64(d) * (1 + p.Jitter*(2*rnd-1))), true
}
