package inflight

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

func TestCapsPerKeyAndInTotal(t *testing.T) {
	l := New(2, 3)
	a1, err1 := l.Acquire("a")
	_, err2 := l.Acquire("a")
	if err1 != nil || err2 != nil {
		t.Fatalf("the first two requests of a key must be admitted: %v, %v", err1, err2)
	}
	if _, err := l.Acquire("a"); !errors.Is(err, ErrKeyFull) {
		t.Fatalf("a third request of one key at a cap of 2 must be refused with ErrKeyFull, got %v", err)
	}
	if _, err := l.Acquire("b"); err != nil {
		t.Fatalf("another key has its own cap: %v", err)
	}
	if _, err := l.Acquire("c"); !errors.Is(err, ErrTotalFull) {
		t.Fatalf("a fourth request at a total cap of 3 must be refused with ErrTotalFull, got %v", err)
	}
	a1()
	a1() // a second call gives nothing back twice
	if n, _ := l.Held(); n != 2 {
		t.Fatalf("%d requests in flight after one release; a release called twice must count once", n)
	}
	if _, err := l.Acquire("c"); err != nil {
		t.Fatalf("a released slot must be free again: %v", err)
	}
}

func TestKeysAreForgottenWhenTheirLastSlotReturns(t *testing.T) {
	l := New(2, 0)
	r1, _ := l.Acquire("a")
	r2, _ := l.Acquire("a")
	r3, _ := l.Acquire("b")
	r1()
	r2()
	r3()
	if n, keys := l.Held(); n != 0 || keys != 0 {
		t.Fatalf("%d requests and %d keys held with nothing in flight: entries must be removed when their count returns to zero", n, keys)
	}
}

func TestNoCap(t *testing.T) {
	l := New(0, 0)
	for range 1000 {
		if _, err := l.Acquire("a"); err != nil {
			t.Fatalf("a limiter without a cap refused: %v", err)
		}
	}
	if _, keys := l.Held(); keys != 0 {
		t.Fatal("a limiter without a cap must hold nothing")
	}
}

// Under concurrent use no key ever has more than its cap in flight, the process never
// more than its own, and nothing is held once every request has ended.
func TestConcurrentUseNeverExceedsTheCaps(t *testing.T) {
	const perKey, total = 3, 5
	l := New(perKey, total)
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
				if inFlight[k].Add(1) > perKey || all.Add(1) > total {
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
	if n, keys := l.Held(); n != 0 || keys != 0 {
		t.Fatalf("%d requests and %d keys held with nothing in flight", n, keys)
	}
}
