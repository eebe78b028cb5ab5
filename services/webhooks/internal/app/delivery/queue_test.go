package delivery

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/customerapi/platform/services/webhooks/internal/adapters/sender"
	"github.com/customerapi/platform/services/webhooks/internal/adapters/ssrf"
	"github.com/customerapi/platform/services/webhooks/internal/domain"
	"github.com/customerapi/platform/services/webhooks/internal/domain/signing"
)

// memQueue is the tests' in-memory queue (domain.Queue). A claim takes the jobs added that
// are due by the queue's clock, in order: at most req.Limit, req.PerSubscription of one
// subscription and its room of a tenant, as the claim does. Upcoming names the due
// times still to come. Complete records each delivery's last status. It never notifies
// (Listen waits for the end), like a listener whose connection never comes up.
type memQueue struct {
	// delay is each claim's time (its query's).
	delay time.Duration
	// clock is the database's clock (nil: the replica's).
	clock func() time.Time
	// hold, when set, runs at the start of each claim; a claim whose hold fails takes nothing.
	hold func(ctx context.Context) error

	mu        sync.Mutex
	due       []domain.Job
	claims    int
	completed map[string]domain.Status // by delivery ID
	done      int
}

func (q *memQueue) now() time.Time {
	if q.clock == nil {
		return time.Now()
	}
	return q.clock()
}

func (q *memQueue) add(jobs ...domain.Job) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.due = append(q.due, jobs...)
}

func (q *memQueue) Claim(ctx context.Context, req domain.ClaimRequest) (domain.Claimed, error) {
	q.mu.Lock()
	q.claims++
	q.mu.Unlock()
	if q.hold != nil {
		if err := q.hold(ctx); err != nil {
			return domain.Claimed{}, err
		}
	}
	time.Sleep(q.delay)
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.now()
	var out, left []domain.Job
	per, perTenant := map[string]int{}, map[string]int{}
	for _, j := range q.due {
		room, ok := req.Rooms[j.TenantID]
		if !ok {
			room = req.DefaultRoom
		}
		if !j.DueAt.After(now) && len(out) < req.Limit && per[j.SubscriptionID] < req.PerSubscription && perTenant[j.TenantID] < room {
			per[j.SubscriptionID]++
			perTenant[j.TenantID]++
			out = append(out, j)
			continue
		}
		left = append(left, j)
	}
	q.due = left
	return domain.Claimed{Jobs: out}, nil
}

func (q *memQueue) Upcoming(_ context.Context, limit int) (domain.Upcoming, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	up := domain.Upcoming{Now: q.now()}
	for _, j := range q.due {
		if j.DueAt.After(up.Now) {
			up.Due = append(up.Due, domain.Falling{At: j.DueAt, TenantID: j.TenantID})
		}
	}
	slices.SortFunc(up.Due, func(a, b domain.Falling) int { return a.At.Compare(b.At) })
	up.Due = up.Due[:min(len(up.Due), limit)]
	return up, nil
}

func (q *memQueue) Complete(_ context.Context, results []domain.Result, _ time.Duration) ([]domain.Disabled, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.completed == nil {
		q.completed = map[string]domain.Status{}
	}
	for _, r := range results {
		q.completed[r.DeliveryID] = r.Status
	}
	q.done += len(results)
	return nil, nil
}

// Listen implements domain.Notifications: nothing is notified.
func (q *memQueue) Listen(ctx context.Context, _ time.Duration, _ domain.NotificationHandler) {
	<-ctx.Done()
}

func (q *memQueue) completedCount() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.done
}

// waitDone waits until n deliveries are completed, at most within, and reports whether
// they were.
func (q *memQueue) waitDone(n int, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for q.completedCount() < n {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// job is a delivery to url with a fresh signing secret.
func job(t *testing.T, url string) domain.Job {
	t.Helper()
	secret, err := signing.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	return domain.Job{EventID: "evt_1", URL: url, Secret: secret, Body: []byte(`{"eventId":"evt_1"}`), Active: true}
}

// newGuard lets attempts reach the receivers on 127.0.0.1.
func newGuard() *ssrf.Guard { return ssrf.NewGuard(ssrf.Policy{AllowPrivate: true}, nil, time.Second) }

func newSender(timeout time.Duration) *sender.Sender { return sender.New(newGuard(), timeout, 4) }
