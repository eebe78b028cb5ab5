package inflight

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

func TestCapPerKeyAndForgetting(t *testing.T) {
	l := New(2)
	for i := range 2 {
		if !l.Acquire("a") {
			t.Fatalf("request %d of key a was refused; the first two of a key must be admitted", i+1)
		}
	}
	if l.Acquire("a") {
		t.Fatal("a third request in flight for one key must be refused at a cap of 2")
	}
	if !l.Acquire("b") {
		t.Fatal("another key has its own cap")
	}
	l.Release("a")
	if !l.Acquire("a") {
		t.Fatal("a released slot must be free again")
	}
	l.Release("a")
	l.Release("a")
	l.Release("b")
	if n := l.Keys(); n != 0 {
		t.Fatalf("%d keys held with nothing in flight: entries must be removed when their count returns to zero", n)
	}
	l.Release("never") // a stray release changes nothing
	if n := l.Keys(); n != 0 {
		t.Fatalf("a stray release left %d keys", n)
	}
}

func TestNoCap(t *testing.T) {
	l := New(0)
	for range 1000 {
		if !l.Acquire("a") {
			t.Fatal("a limiter without a cap refused")
		}
	}
	if l.Keys() != 0 {
		t.Fatal("a limiter without a cap must hold nothing")
	}
}

// Under concurrent use no key ever has more than the cap in flight, and every entry is
// gone once all requests are done.
func TestConcurrentUseNeverExceedsTheCap(t *testing.T) {
	const max = 3
	l := New(max)
	var inFlight [4]atomic.Int32
	var over atomic.Int32
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				k := (g + i) % len(inFlight)
				key := fmt.Sprint("k", k)
				if !l.Acquire(key) {
					continue
				}
				if inFlight[k].Add(1) > max {
					over.Add(1)
				}
				inFlight[k].Add(-1)
				l.Release(key)
			}
		}()
	}
	wg.Wait()
	if over.Load() > 0 {
		t.Fatalf("%d times a key had more than %d in flight", over.Load(), max)
	}
	if n := l.Keys(); n != 0 {
		t.Fatalf("%d keys left after every request finished", n)
	}
}
