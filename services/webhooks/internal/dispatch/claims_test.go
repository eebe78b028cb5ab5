package dispatch

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/customerapi/platform/services/webhooks/internal/adapters"
)

// dueQueue hands out the jobs added to it, as the claim does: at most req.Limit, at most
// req.PerSubscription of one subscription and at most its room of a tenant; it counts
// the completed deliveries. A claim takes delay (its query's time).
type dueQueue struct {
	mu    sync.Mutex
	due   []adapters.Job
	done  int
	delay time.Duration
}

func (q *dueQueue) add(jobs ...adapters.Job) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.due = append(q.due, jobs...)
}

func (q *dueQueue) Claim(_ context.Context, req adapters.ClaimRequest) (adapters.Claimed, error) {
	time.Sleep(q.delay)
	q.mu.Lock()
	defer q.mu.Unlock()
	var out, left []adapters.Job
	per, perTenant := map[string]int{}, map[string]int{}
	for _, j := range q.due {
		room, ok := req.Rooms[j.TenantID]
		if !ok {
			room = req.DefaultRoom
		}
		if len(out) < req.Limit && per[j.SubscriptionID] < req.PerSubscription && perTenant[j.TenantID] < room {
			per[j.SubscriptionID]++
			perTenant[j.TenantID]++
			out = append(out, j)
			continue
		}
		left = append(left, j)
	}
	q.due = left
	return adapters.Claimed{Jobs: out}, nil
}

func (q *dueQueue) Upcoming(context.Context, int) (adapters.Upcoming, error) {
	return adapters.Upcoming{}, nil
}

func (q *dueQueue) Complete(_ context.Context, results []adapters.Result, _ time.Duration) ([]adapters.Disabled, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.done += len(results)
	return nil, nil
}

func (q *dueQueue) completed() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.done
}

// waitDone waits until n deliveries are completed.
func (q *dueQueue) waitDone(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if q.completed() >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d deliveries completed within 10 s (the engine's idle wait is a minute: it must claim again on its own)", q.completed(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// fastReceiver answers every request 204 at once.
func fastReceiver(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(srv.Close)
	return srv.URL
}

// A subscription with more due than one claim takes of it is refilled when its lane runs
// low, without a notification or the idle wait.
func TestACappedLaneIsRefilledWhenItRunsLow(t *testing.T) {
	q := &dueQueue{}
	url := fastReceiver(t)
	const n = 40 // ten claims' worth at laneDepth × PerSubscription = 4
	for i := range n {
		j := job(t, url)
		j.TenantID, j.SubscriptionID, j.DeliveryID, j.OrderingKey = "acme", "whsub_a", fmt.Sprintf("dlv_%d", i), fmt.Sprintf("form_%d", i)
		q.add(j)
	}
	runEngine(t, Config{Workers: 4, PerSubscription: 2}, q)
	q.waitDone(t, n)
}

// A claim that takes all the room a tenant has leaves the rest of its due deliveries for
// later, and attempts of the tenant that finish while the claim is in flight leave its
// held count below the bound afterwards: the engine must still claim again without a
// notification. A version of the wake-ups that relied on the held count alone left the
// tenant's deliveries waiting for the idle minute (TestAbuseWebhookTenantCannotStarveOthers
// found it; docs/benchmarks.md, "Fewer claims that find nothing").
func TestATenantFilledByAClaimIsClaimedAgain(t *testing.T) {
	q := &dueQueue{delay: 20 * time.Millisecond}
	url := fastReceiver(t)
	const n = 12
	for i := range n {
		j := job(t, url)
		j.TenantID, j.SubscriptionID = "acme", fmt.Sprintf("whsub_%d", i) // no lane fills up
		j.DeliveryID, j.OrderingKey = fmt.Sprintf("dlv_%d", i), fmt.Sprintf("form_%d", i)
		q.add(j)
	}
	runEngine(t, Config{Workers: 4, PerSubscription: 1, TenantConcurrency: 1}, q) // a room of 2
	q.waitDone(t, n)
}
