package delivery

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/customerapi/platform/services/webhooks/internal/domain"
)

// fastReceiver answers every request 204 at once.
func fastReceiver(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(srv.Close)
	return srv.URL
}

// A subscription with more due than one claim takes of it is refilled when its lane runs
// low, without a notification or the idle wait.
func TestACappedLaneIsRefilledWhenItRunsLow(t *testing.T) {
	q := &memQueue{}
	url := fastReceiver(t)
	const n = 40 // ten claims' worth at laneDepth × PerSubscription = 4
	for i := range n {
		j := job(t, url)
		j.TenantID, j.SubscriptionID, j.DeliveryID, j.OrderingKey = "acme", "whsub_a", fmt.Sprintf("dlv_%d", i), fmt.Sprintf("form_%d", i)
		q.add(j)
	}
	runEngine(t, Config{Workers: 4, PerSubscription: 2}, q)
	waitDone(t, q, n)
}

// A claim that takes all the room a tenant has leaves the rest of its due deliveries for
// later, and attempts of the tenant that finish while the claim is in flight leave its
// held count below the bound afterwards: the engine must still claim again without a
// notification. A version of the wake-ups that relied on the held count alone left the
// tenant's deliveries waiting for the idle minute (TestAbuseWebhookTenantCannotStarveOthers
// found it; docs/benchmarks.md at commit 7deceba, "Fewer claims that find nothing").
func TestATenantFilledByAClaimIsClaimedAgain(t *testing.T) {
	q := &memQueue{delay: 20 * time.Millisecond}
	url := fastReceiver(t)
	const n = 12
	for i := range n {
		j := job(t, url)
		j.TenantID, j.SubscriptionID = "acme", fmt.Sprintf("whsub_%d", i) // no lane fills up
		j.DeliveryID, j.OrderingKey = fmt.Sprintf("dlv_%d", i), fmt.Sprintf("form_%d", i)
		q.add(j)
	}
	runEngine(t, Config{Workers: 4, PerSubscription: 1, TenantConcurrency: 1}, q) // a room of 2
	waitDone(t, q, n)
}

// waitDone waits until n deliveries are completed.
func waitDone(t *testing.T, q *memQueue, n int) {
	t.Helper()
	if !q.waitDone(n, 10*time.Second) {
		t.Fatalf("%d of %d deliveries completed within 10 s (the engine's idle wait is a minute: it must claim again on its own)", q.completedCount(), n)
	}
}

// A replica whose clock runs ahead of the database's waits for a due time by the
// database's clock, not its own: it claims the retry once, when the database finds it
// due. Judged by its own clock, the due time came a second early, and every claim in
// that second found nothing and read the due time to come again: a claim every
// millisecond until the database's clock got there.
func TestAReplicaAheadOfTheDatabaseClockClaimsADueTimeOnce(t *testing.T) {
	const skew = time.Second
	// The database's clock is behind the replica's by skew. The queue holds one retry of
	// tenant "late", due by the database's clock 300 ms from now (700 ms ago by the
	// replica's): Upcoming names it until then, and a claim takes it from then on.
	q := &memQueue{clock: func() time.Time { return time.Now().Add(-skew) }}
	q.add(domain.Job{TenantID: "late", DeliveryID: "d1", SubscriptionID: "s1", OrderingKey: "k", URL: "http://127.0.0.1:1/",
		Secret: "whsec_c2VjcmV0", Active: true, AttemptNo: 1, DueAt: q.now().Add(300 * time.Millisecond)})
	runEngine(t, Config{Workers: 4, PerSubscription: 1, Policy: domain.RetryPolicy{Schedule: domain.DefaultSchedule}}, q)
	if !q.waitDone(1, 5*time.Second) {
		t.Fatal("the retry was not attempted within 5 s of its due time")
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	// The start-up round's claims, the one at the due time, and those the attempt's end
	// brings: a handful (268 in the 300 ms without the engine's view of the database's clock).
	if q.claims > 8 {
		t.Errorf("%d claims until the retry was due by the database's clock, %s after the replica's: the engine "+
			"claimed for nothing until the database's clock caught up", q.claims, skew)
	}
}
