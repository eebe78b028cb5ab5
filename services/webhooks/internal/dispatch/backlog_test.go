package dispatch

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/customerapi/platform/libs/postgres/pgtest"
	"github.com/customerapi/platform/libs/testwait"
	"github.com/customerapi/platform/services/webhooks/internal/adapters"
	"github.com/customerapi/platform/services/webhooks/internal/domain"
	"github.com/customerapi/platform/services/webhooks/migrations"
)

func noStats(context.Context) (adapters.QueueStats, error) { return adapters.QueueStats{}, nil }

// claimCount reads how many claims the engine has made.
func claimCount(t *testing.T, reg *prometheus.Registry) uint64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "webhook_claim_duration_seconds" {
			return mf.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	t.Fatal("no webhook_claim_duration_seconds")
	return 0
}

// Many more tenants than one claim explores (claimTenants), each with a delivery waiting
// for a retry, cost nothing while nothing is due: the engine does not keep claiming. A
// new tenant's deliveries are claimed as their notification arrives, not when the turn
// across tenants comes round to it, and a retry that falls due without a notification
// is found by a round when it is due.
func TestManyTenantsWaitingForRetries(t *testing.T) {
	const tenants = 8 * claimTenants
	pool := pgtest.NewPool(t, migrations.Set)
	store := adapters.NewStore(pool)
	waiting := &arrivalLog{at: map[string]time.Time{}, want: 1, all: make(chan struct{})}
	waitingSrv := httptest.NewServer(waiting)
	t.Cleanup(waitingSrv.Close)
	fresh := &arrivalLog{at: map[string]time.Time{}, want: 20, all: make(chan struct{})}
	freshSrv := httptest.NewServer(fresh)
	t.Cleanup(freshSrv.Close)

	ctx := t.Context()
	if _, err := pool.Exec(ctx, `INSERT INTO subscriptions (tenant_id, subscription_id, url, active, secret, created_at, updated_at)
		SELECT 'tenant_' || lpad(i::text, 4, '0'), 'whsub_' || i, $1, true, 'whsec_c2VjcmV0', now(), now()
		FROM generate_series(1, $2::int) AS i`, waitingSrv.URL, tenants); err != nil {
		t.Fatal(err)
	}
	// One delivery each, due in an hour, but tenant 7's in two seconds.
	began := time.Now()
	if _, err := pool.Exec(ctx, `INSERT INTO deliveries (tenant_id, delivery_id, subscription_id, event_id, event_type,
			ordering_key, body, status, next_attempt_at, created_at, updated_at)
		SELECT 'tenant_' || lpad(i::text, 4, '0'), 'delivery_' || i, 'whsub_' || i, 'evt_' || i, 'form.submitted', 'k' || i,
			convert_to('{"eventId":"evt_' || i || '"}', 'UTF8'), 'pending',
			now() + CASE WHEN i = 7 THEN interval '2 seconds' ELSE interval '1 hour' END, now(), now()
		FROM generate_series(1, $1::int) AS i`, tenants); err != nil {
		t.Fatal(err)
	}
	subscribeAll(t, store, "tenant_0250x", "whsub_fresh", freshSrv.URL) // among the others in tenant order

	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	reg := prometheus.NewRegistry()
	queue := &restingQueue{Queue: store, marker: "tenant_marker"}
	d := New(Config{Workers: 256, PerSubscription: 8, TenantConcurrency: 64, Lease: time.Minute, ClaimBatch: 100,
		Policy: domain.RetryPolicy{Schedule: domain.DefaultSchedule}, DisableAfter: time.Hour,
		ShutdownGrace: 100 * time.Millisecond, Idle: time.Minute},
		queue, NewSender(newGuard(), 10*time.Second, 16), pool, log, NewMetrics(reg, noStats, log))
	queue.d = d
	runUntilCleanup(t, d)

	queue.waitRest(t, pool)
	before := claimCount(t, reg)
	time.Sleep(500 * time.Millisecond) // the quiet window: nothing is due, so at most a claim or two may happen in it
	if n := claimCount(t, reg) - before; n > 2 {
		t.Errorf("%d claims in half a second with nothing due: the engine polls the tenants waiting for retries", n)
	}

	enqueued := map[string]time.Time{}
	for i := range 20 {
		at := time.Now()
		e := enqueue(t, store, pool, "tenant_0250x", fmt.Sprintf("form_%d", i))
		enqueued[e.ID] = at
		time.Sleep(10 * time.Millisecond) // pacing: one new delivery every 10 ms, each timed from its enqueue
	}
	select {
	case <-fresh.all:
	case <-time.After(10 * time.Second):
		t.Fatal("a new tenant's deliveries did not arrive within 10 s")
	}
	fresh.mu.Lock()
	var slowest time.Duration
	for id, at := range fresh.at {
		slowest = max(slowest, at.Sub(enqueued[id]))
	}
	fresh.mu.Unlock()
	if slowest > time.Second {
		t.Errorf("a new tenant's delivery took %s from enqueue to receiver among %d tenants waiting for retries", slowest, tenants)
	}

	select {
	case <-waiting.all:
		if at := waiting.at["evt_7"]; at.Sub(began) < 2*time.Second {
			t.Errorf("the retry due after 2 s arrived after %s", at.Sub(began))
		}
	case <-time.After(time.Until(began.Add(5 * time.Second))):
		t.Fatal("a retry that fell due without a notification was not attempted within 3 s of its due time")
	}
	waiting.mu.Lock()
	defer waiting.mu.Unlock()
	if len(waiting.at) != 1 {
		t.Errorf("%d deliveries waiting for a retry were attempted, want only the one due", len(waiting.at))
	}
	t.Logf("new tenant's slowest delivery %s", slowest)
}

// restingQueue is the engine's queue in a test that must know when the start-up rounds
// are over: the one at start and the one the listener asks for once it has connected.
type restingQueue struct {
	Queue
	d      *Dispatcher
	marker string // a tenant of no delivery, named by the test's notifications

	mu      sync.Mutex
	visited bool // a claim visited marker: the listener had connected, and asked for its round, before
	resting bool // the last call was NextDue, after visited, and no round was asked for then
}

func (q *restingQueue) Claim(ctx context.Context, req adapters.ClaimRequest) (adapters.Claimed, error) {
	q.mu.Lock()
	if _, ok := req.Rooms[q.marker]; ok {
		q.visited = true
	}
	q.resting = false
	q.mu.Unlock()
	return q.Queue.Claim(ctx, req)
}

// NextDue is called at the end of a fill, when no round is open: with the listener's
// request taken (reround false), the round it asked for is over.
func (q *restingQueue) NextDue(ctx context.Context) (time.Duration, bool, error) {
	wait, ok, err := q.Queue.NextDue(ctx)
	q.mu.Lock()
	q.resting = q.visited && !q.d.reround.Load()
	q.mu.Unlock()
	return wait, ok, err
}

// waitRest waits until the claim loop rests after its start-up rounds, notifying marker
// until a claim visits it (a notification sent before the listener connected is lost).
func (q *restingQueue) waitRest(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	testwait.For(t, 10*time.Second, "the engine to rest after its start-up rounds", func() (bool, string) {
		q.mu.Lock()
		visited, resting := q.visited, q.resting
		q.mu.Unlock()
		if !visited {
			if _, err := pool.Exec(t.Context(), "SELECT pg_notify($1, $2)", adapters.Channel, q.marker); err != nil {
				t.Fatal(err)
			}
		}
		return resting, fmt.Sprintf("listener's notification seen %v, resting %v", visited, resting)
	})
}
