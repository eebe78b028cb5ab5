// Package inflight bounds how many requests are in flight at once: per key (a tenant, a
// download link, a client address), so one key cannot take a process's connections or
// memory, and optionally in total, so the sum stays within what the process can hold. A
// key is kept only while it has requests in flight, so the memory held follows the
// current load, not every key ever seen.
package inflight

import (
	"errors"
	"sync"
)

// Refusals of Acquire, by the cap that was reached.
var (
	ErrKeyFull   = errors.New("inflight: the key has its most requests in flight")
	ErrTotalFull = errors.New("inflight: the process has its most requests in flight")
)

// Limiter counts requests in flight per key and in total.
type Limiter struct {
	perKey, total int
	mu            sync.Mutex
	n             map[string]int
	all           int
}

// New returns a Limiter allowing perKey requests of one key and total requests in all at
// once (a cap below 1: none; with neither cap nothing is counted).
func New(perKey, total int) *Limiter {
	return &Limiter{perKey: perKey, total: total, n: map[string]int{}}
}

// PerKey is the cap per key (0 or less: none).
func (l *Limiter) PerKey() int { return l.perKey }

// Total is the cap of the process (0 or less: none).
func (l *Limiter) Total() int { return l.total }

// Acquire takes a slot for key, or says which cap is reached. The release function gives
// the slot back once, however often it is called. The key is kept, so a caller whose key
// aliases a buffer must pass a copy.
func (l *Limiter) Acquire(key string) (release func(), err error) {
	if l.perKey < 1 && l.total < 1 {
		return func() {}, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.perKey > 0 && l.n[key] >= l.perKey {
		return nil, ErrKeyFull
	}
	if l.total > 0 && l.all >= l.total {
		return nil, ErrTotalFull
	}
	l.n[key]++
	l.all++
	var once sync.Once
	return func() { once.Do(func() { l.release(key) }) }, nil
}

func (l *Limiter) release(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all--
	if n := l.n[key]; n > 1 {
		l.n[key] = n - 1
	} else {
		delete(l.n, key)
	}
}

// Held is the number of requests in flight and of keys holding them (the entries held).
func (l *Limiter) Held() (requests, keys int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.all, len(l.n)
}
