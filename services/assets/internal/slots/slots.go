// Package slots bounds how many uploads are in flight at once: per tenant, so one tenant
// cannot take the process's memory, and in the process, so the sum stays under the pod's
// memory limit. A tenant is kept only while it has uploads in flight.
package slots

import (
	"errors"
	"sync"
)

// Refusals of Acquire, by the cap that was reached.
var (
	ErrTenantFull  = errors.New("slots: the tenant has its most uploads in flight")
	ErrProcessFull = errors.New("slots: the process has its most uploads in flight")
)

// Limiter counts uploads in flight per tenant and in total.
type Limiter struct {
	perTenant, total int
	mu               sync.Mutex
	n                map[string]int
	all              int
}

// New returns a Limiter allowing perTenant uploads of one tenant and total uploads in all
// at once (a cap below 1: none).
func New(perTenant, total int) *Limiter {
	return &Limiter{perTenant: perTenant, total: total, n: map[string]int{}}
}

// PerTenant is the cap per tenant (0 or less: none).
func (l *Limiter) PerTenant() int { return l.perTenant }

// Total is the cap of the process (0 or less: none).
func (l *Limiter) Total() int { return l.total }

// Acquire takes a slot for tenant, or says which cap is reached. The release function
// gives the slot back once, however often it is called.
func (l *Limiter) Acquire(tenant string) (release func(), err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.perTenant > 0 && l.n[tenant] >= l.perTenant {
		return nil, ErrTenantFull
	}
	if l.total > 0 && l.all >= l.total {
		return nil, ErrProcessFull
	}
	l.n[tenant]++
	l.all++
	var once sync.Once
	return func() { once.Do(func() { l.release(tenant) }) }, nil
}

func (l *Limiter) release(tenant string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all--
	if n := l.n[tenant]; n > 1 {
		l.n[tenant] = n - 1
	} else {
		delete(l.n, tenant)
	}
}

// InFlight is the number of uploads in flight and of tenants holding them.
func (l *Limiter) InFlight() (uploads, tenants int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.all, len(l.n)
}
