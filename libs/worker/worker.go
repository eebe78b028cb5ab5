// Package worker holds the small mechanisms every background loop of the platform uses:
// waits that end with the context, doubling backoff between failed tries, and a wake-up
// signal that coalesces. Each exists once here instead of once per loop.
package worker

import (
	"context"
	"time"
)

// Sleep waits d, or less if ctx ends first; it reports whether the whole wait passed.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Backoff spaces the tries of something that keeps failing: the first wait is First,
// each next one doubles, up to Max. The zero value waits 100 ms, doubling up to 5 s.
type Backoff struct {
	First, Max time.Duration
	next       time.Duration
}

// Next returns the wait before the next try and doubles the one after it.
func (b *Backoff) Next() time.Duration {
	if b.next == 0 {
		b.next = b.First
		if b.next <= 0 {
			b.next = 100 * time.Millisecond
		}
	}
	d := b.next
	limit := b.Max
	if limit <= 0 {
		limit = 5 * time.Second
	}
	b.next = min(b.next*2, limit)
	return min(d, limit)
}

// Peek returns the wait Next would return, without moving on (for logs).
func (b *Backoff) Peek() time.Duration {
	c := *b
	return c.Next()
}

// Reset starts the waits again from First: call it after a success.
func (b *Backoff) Reset() { b.next = 0 }

// Sleep waits Next(), or less if ctx ends first; it reports whether the whole wait passed.
func (b *Backoff) Sleep(ctx context.Context) bool { return Sleep(ctx, b.Next()) }

// Waker is a wake-up signal that never blocks its sender and coalesces: any number of
// Wake calls before the waiting side reads C count as one.
type Waker chan struct{}

// NewWaker returns a Waker.
func NewWaker() Waker { return make(Waker, 1) }

// Wake signals the waiting side; it never blocks.
func (w Waker) Wake() {
	select {
	case w <- struct{}{}:
	default: // one is already pending; it covers this one
	}
}

// C is what the waiting side selects on.
func (w Waker) C() <-chan struct{} { return w }
