// Package inflight bounds how many requests per key are in flight at once. A key is kept
// only while it has requests in flight, so the memory held follows the current load, not
// every key ever seen.
package inflight

import "sync"

// Limiter counts requests in flight per key and refuses one past its cap.
type Limiter struct {
	max int
	mu  sync.Mutex
	n   map[string]int
}

// New returns a Limiter allowing at most max requests in flight per key (max < 1: any
// number, nothing is counted).
func New(max int) *Limiter {
	return &Limiter{max: max, n: map[string]int{}}
}

// Max is the cap per key (0 or less: none).
func (l *Limiter) Max() int { return l.max }

// Acquire takes a slot for key, or reports false when key has max requests in flight.
// Every true must be matched by one Release.
func (l *Limiter) Acquire(key string) bool {
	if l.max < 1 {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n[key] >= l.max {
		return false
	}
	l.n[key]++
	return true
}

// Release gives back a slot of key; the key is forgotten when its last slot returns.
func (l *Limiter) Release(key string) {
	if l.max < 1 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch n := l.n[key]; {
	case n > 1:
		l.n[key] = n - 1
	case n == 1:
		delete(l.n, key)
	}
}

// Keys is the number of keys with requests in flight (the entries held).
func (l *Limiter) Keys() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.n)
}
