package worker

import (
	"context"
	"testing"
	"time"
)

func TestBackoffDoublesUpToItsCapAndResets(t *testing.T) {
	b := Backoff{First: 100 * time.Millisecond, Max: 500 * time.Millisecond}
	var got []time.Duration
	for range 5 {
		got = append(got, b.Next())
	}
	want := []time.Duration{100, 200, 400, 500, 500}
	for i := range want {
		if got[i] != want[i]*time.Millisecond {
			t.Fatalf("waits %v, want doubling from First and capped at Max (%v ms)", got, want)
		}
	}
	if b.Peek() != 500*time.Millisecond || b.Next() != 500*time.Millisecond {
		t.Fatal("Peek moved the backoff on")
	}
	b.Reset()
	if d := b.Next(); d != 100*time.Millisecond {
		t.Fatalf("after Reset the wait is %v, want First", d)
	}
	var zero Backoff
	if zero.Next() != 100*time.Millisecond {
		t.Fatal("the zero Backoff starts at 100 ms")
	}
	for range 10 {
		zero.Next()
	}
	if zero.Next() != 5*time.Second {
		t.Fatal("the zero Backoff is capped at 5 s")
	}
}

func TestSleepEndsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if Sleep(ctx, time.Hour) {
		t.Fatal("Sleep reported a full wait on an ended context")
	}
	if !Sleep(context.Background(), time.Millisecond) {
		t.Fatal("Sleep reported an interrupted wait")
	}
}

func TestWakerCoalescesAndNeverBlocks(t *testing.T) {
	w := NewWaker()
	for range 3 {
		w.Wake() // would block on the second without coalescing
	}
	<-w.C()
	select {
	case <-w.C():
		t.Fatal("three wakes before a read gave two signals, want one")
	default:
	}
}
