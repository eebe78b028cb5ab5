package testwait

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// A condition met after a few polls ends the wait at once; one never met ends it at the
// deadline, after a last poll.
func TestUntil(t *testing.T) {
	var polls atomic.Int32
	began := time.Now()
	if !Until(10*time.Second, func() bool { return polls.Add(1) == 3 }) {
		t.Fatal("a condition met on the third poll was reported as missed")
	}
	if d := time.Since(began); d > time.Second {
		t.Fatalf("three polls took %s", d)
	}
	polls.Store(0)
	began = time.Now()
	if Until(50*time.Millisecond, func() bool { polls.Add(1); return false }) {
		t.Fatal("a condition never met was reported as met")
	}
	if d := time.Since(began); d < 50*time.Millisecond {
		t.Fatalf("gave up after %s, before the deadline", d)
	}
	if polls.Load() < 2 {
		t.Fatalf("%d polls in 50 ms", polls.Load())
	}
}

// recorder is a testing.TB that keeps the failure instead of failing.
type recorder struct {
	testing.TB
	failure string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) { r.failure = fmt.Sprintf(format, args...) }

// A timeout names what was awaited and the state last observed.
func TestForNamesTheConditionAndTheLastState(t *testing.T) {
	r := &recorder{TB: t}
	n := 0
	For(r, 30*time.Millisecond, "a webhook delivery to reach the receiver", func() (bool, string) {
		n++
		return false, fmt.Sprintf("status pending (poll %d)", n)
	})
	want := fmt.Sprintf("timed out after 30ms waiting for a webhook delivery to reach the receiver; last observed: status pending (poll %d)", n)
	if r.failure != want {
		t.Fatalf("failure %q, want %q", r.failure, want)
	}
	r.failure = ""
	For(r, 10*time.Millisecond, "nothing in particular", func() (bool, string) { return false, "" })
	if r.failure != "timed out after 10ms waiting for nothing in particular" {
		t.Fatalf("failure without a state: %q", r.failure)
	}
	r.failure = ""
	For(r, time.Second, "a met condition", func() (bool, string) { return true, "done" })
	if r.failure != "" {
		t.Fatalf("a met condition failed: %q", r.failure)
	}
}

// A costly condition is checked at most half the time: the pause after a check is at
// least as long as the check took.
func TestUntilPausesAsLongAsACostlyCheck(t *testing.T) {
	polls := 0
	Until(300*time.Millisecond, func() bool {
		polls++
		time.Sleep(50 * time.Millisecond) // the costly check
		return false
	})
	if polls > 4 {
		t.Fatalf("%d checks of 50 ms in 300 ms, want at most 4 (one every 100 ms and a last one)", polls)
	}
}
