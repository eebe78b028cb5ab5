package slots

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

func TestCapsPerTenantAndInTotal(t *testing.T) {
	l := New(2, 3)
	a1, err1 := l.Acquire("a")
	_, err2 := l.Acquire("a")
	if err1 != nil || err2 != nil {
		t.Fatalf("the first two uploads of a tenant must be admitted: %v, %v", err1, err2)
	}
	if _, err := l.Acquire("a"); !errors.Is(err, ErrTenantFull) {
		t.Fatalf("a third upload of one tenant at a cap of 2 must be refused with ErrTenantFull, got %v", err)
	}
	if _, err := l.Acquire("b"); err != nil {
		t.Fatalf("another tenant has its own cap: %v", err)
	}
	if _, err := l.Acquire("c"); !errors.Is(err, ErrProcessFull) {
		t.Fatalf("a fourth upload at a process cap of 3 must be refused with ErrProcessFull, got %v", err)
	}
	a1()
	a1() // a second call gives nothing back twice
	if n, _ := l.InFlight(); n != 2 {
		t.Fatalf("%d uploads in flight after one release; a release called twice must count once", n)
	}
	if _, err := l.Acquire("c"); err != nil {
		t.Fatalf("a released slot must be free again: %v", err)
	}
}

// Under concurrent use no tenant ever has more than its cap in flight, the process never
// more than its own, and nothing is held once every upload has ended.
func TestConcurrentUseNeverExceedsTheCaps(t *testing.T) {
	const perTenant, total = 3, 5
	l := New(perTenant, total)
	var inFlight [4]atomic.Int32
	var all, over atomic.Int32
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				k := (g + i) % len(inFlight)
				release, err := l.Acquire(string(rune('a' + k)))
				if err != nil {
					continue
				}
				if inFlight[k].Add(1) > perTenant || all.Add(1) > total {
					over.Add(1)
				}
				inFlight[k].Add(-1)
				all.Add(-1)
				release()
			}
		}()
	}
	wg.Wait()
	if over.Load() > 0 {
		t.Fatalf("a cap was exceeded %d times", over.Load())
	}
	if n, tenants := l.InFlight(); n != 0 || tenants != 0 {
		t.Fatalf("%d uploads and %d tenants held with nothing in flight", n, tenants)
	}
}
