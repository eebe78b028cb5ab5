// Package testwait makes tests wait for a condition instead of sleeping for a guessed
// time: a sleep is flaky when it is too short for a slow machine and slow when it is long
// enough. It polls with a short, growing pause, so a condition met at once costs
// nothing, and a timeout names what was awaited and the state last seen. A condition that
// is costly to check (a kubectl call, a round of Prometheus queries) is never polled more
// than half the time: the pause is at least as long as the last check took.
package testwait

import (
	"testing"
	"time"
)

// The pause between two polls: it starts short and doubles up to maxPause, unless the
// last poll took longer.
const (
	firstPause = 5 * time.Millisecond
	maxPause   = 100 * time.Millisecond
)

// For polls cond until it reports ok, failing t after within with what and cond's last state.
//
// what names the condition awaited ("a webhook delivery to reach the receiver"); state
// is what cond last observed ("status pending"), shown on failure when not empty. The
// failure reads "timed out after 10s waiting for a webhook delivery to reach the
// receiver; last observed: status pending". Call it from the test's goroutine.
func For(t testing.TB, within time.Duration, what string, cond func() (ok bool, state string)) {
	t.Helper()
	var state string
	if Until(within, func() bool {
		var ok bool
		ok, state = cond()
		return ok
	}) {
		return
	}
	if state == "" {
		t.Fatalf("timed out after %s waiting for %s", within, what)
	} else {
		t.Fatalf("timed out after %s waiting for %s; last observed: %s", within, what, state)
	}
}

// Eventually is For with a condition that reports no state.
func Eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	For(t, within, what, func() (bool, string) { return cond(), "" })
}

// Until polls cond until it holds or within has passed, and reports whether it held.
//
// cond is polled once more at the deadline, so a condition met during the last pause is
// not reported as missed.
func Until(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	pause := firstPause
	for {
		began := time.Now()
		if cond() {
			return true
		}
		took := time.Since(began)
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		time.Sleep(min(max(pause, took), left))
		pause = min(2*pause, maxPause)
	}
}
