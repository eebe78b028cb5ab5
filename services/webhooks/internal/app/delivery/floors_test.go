package delivery

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/postgres/pgtest"
	"github.com/customerapi/platform/libs/testwait"
	"github.com/customerapi/platform/services/webhooks/internal/adapters"
	"github.com/customerapi/platform/services/webhooks/internal/adapters/metrics"
	"github.com/customerapi/platform/services/webhooks/internal/adapters/secretbox"
	"github.com/customerapi/platform/services/webhooks/internal/adapters/sender"
	"github.com/customerapi/platform/services/webhooks/internal/domain"
	"github.com/customerapi/platform/services/webhooks/migrations"
)

// What the floors keep: what a claim found of the tenants that finished floorAfter
// deliveries, lowered by every notification of a delivery due earlier (also one that
// arrives while the claim is in flight, as its snapshot may not have seen the delivery);
// nothing for a tenant notified without a due time; nothing at all after they are
// forgotten, at most floorLife after the last time.
func TestFloorsNeverPassANotifiedDelivery(t *testing.T) {
	t0 := time.Now()
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	f := newFloors()
	finish := func(id string, n int) {
		f.done(slices.Repeat([]domain.Result{{TenantID: id}}, n))
	}
	busy := func(ids ...string) {
		for _, id := range ids {
			finish(id, floorAfter)
		}
	}
	busy("acme", "globex", "initech", "umbrella")
	check := func(step string, want map[string]time.Time) {
		t.Helper()
		got, gen := f.begin(t0)
		f.learn(gen, nil) // a failed claim learns nothing
		if !maps.Equal(got, want) {
			t.Fatalf("%s: floors %v, want %v", step, got, want)
		}
	}

	finish("hooli", floorAfter-1)
	_, gen := f.begin(t0)
	f.learn(gen, map[string]time.Time{"acme": at(10), "globex": at(20), "hooli": at(30)})
	check("after a claim (hooli finished too few deliveries to be worth a floor)",
		map[string]time.Time{"acme": at(10), "globex": at(20)})

	_, gen = f.begin(t0)
	f.notified("acme", at(5), true)
	f.notified("acme", at(7), true)
	f.notified("initech", at(1), true)
	f.notified("globex", time.Time{}, false)
	f.learn(gen, map[string]time.Time{"acme": at(12), "initech": at(30), "globex": at(25), "umbrella": at(40)})
	check("after notifications during a claim", map[string]time.Time{"acme": at(5), "initech": at(1), "umbrella": at(40)})

	f.notified("umbrella", at(3), true)
	f.notified("acme", at(9), true)
	check("after notifications between claims", map[string]time.Time{"acme": at(5), "initech": at(1), "umbrella": at(3)})

	f.notified("acme", time.Time{}, false)
	check("after a notification without a due time", map[string]time.Time{"initech": at(1), "umbrella": at(3)})

	_, gen = f.begin(t0)
	f.forget(t0)
	f.learn(gen, map[string]time.Time{"acme": at(50)})
	check("after the listener reconnected during a claim", map[string]time.Time{})

	busy("acme") // forgetting counts afresh
	_, gen = f.begin(t0)
	f.learn(gen, map[string]time.Time{"acme": at(1)})
	if got, gen := f.begin(t0.Add(floorLife)); len(got) != 0 {
		f.learn(gen, nil)
		t.Fatalf("floors %v kept past floorLife", got)
	}

	// Beyond maxFloors tenants, the others are not kept; a claim during which more
	// tenants were notified than can be told apart learns nothing.
	found := map[string]time.Time{}
	for i := range maxFloors + 10 {
		found[fmt.Sprintf("t%04d", i)] = at(i)
		busy(fmt.Sprintf("t%04d", i))
	}
	busy("late")
	_, gen = f.begin(t0.Add(floorLife))
	f.learn(gen, found)
	got, gen := f.begin(t0.Add(floorLife))
	if len(got) != maxFloors {
		t.Fatalf("kept %d floors, want at most %d", len(got), maxFloors)
	}
	for i := range maxFloors + 1 {
		f.notified(fmt.Sprintf("n%04d", i), at(0), true)
	}
	f.learn(gen, map[string]time.Time{"late": at(1)})
	if got, _ := f.begin(t0.Add(floorLife)); got["late"] != (time.Time{}) {
		t.Fatal("a claim during which too many tenants were notified learned a floor")
	}
}

// A delivery recorded by a transaction that began before the engine's claims moved the
// floor of a busy tenant past its due time, and committed after, arrives at once: its
// notification lowers the floor (without it, the claims would not see the delivery until
// the floors are forgotten, floorLife later).
func TestDeliveryOfAnOlderTransactionIsNotPassedOver(t *testing.T) {
	pool := pgtest.NewPool(t, migrations.Set)
	store := adapters.NewStore(pool, secretbox.Ephemeral())
	arrived := &arrivalLog{at: map[string]time.Time{}, want: floorAfter + 31, all: make(chan struct{})}
	srv := httptest.NewServer(arrived)
	t.Cleanup(srv.Close)
	subscribeAll(t, store, "acme", "whsub_a", srv.URL)

	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	queue := &floorsSent{Queue: store}
	d := New(Config{Workers: 16, PerSubscription: 8, TenantConcurrency: 16, Lease: time.Minute, ClaimBatch: 100,
		Policy: domain.RetryPolicy{Schedule: domain.DefaultSchedule}, DisableAfter: time.Hour,
		ShutdownGrace: 100 * time.Millisecond, Idle: time.Minute},
		queue, sender.New(newGuard(), 10*time.Second, 16), &adapters.Listener{Pool: pool, Log: log}, log, metrics.New(prometheus.NewRegistry(), nil, log))
	runUntilCleanup(t, d)

	waitArrived := func(n int, within time.Duration) {
		t.Helper()
		testwait.For(t, within, fmt.Sprintf("%d deliveries to arrive", n), func() (bool, string) {
			arrived.mu.Lock()
			defer arrived.mu.Unlock()
			return len(arrived.at) >= n, fmt.Sprintf("%d arrived", len(arrived.at))
		})
	}
	for i := range floorAfter {
		enqueue(t, store, pool, "acme", fmt.Sprintf("form_%d", i))
	}
	waitArrived(floorAfter, 20*time.Second)

	older, err := pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = older.Rollback(context.Background()) }()
	e, err := events.New("acme", events.TypeFormSubmitted, "form_older", json.RawMessage(`{"type":"form.submitted"}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := adapters.Intake(older).RecordEvent(t.Context(), e); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // the next deliveries are due later
	for i := range 30 {
		enqueue(t, store, pool, "acme", fmt.Sprintf("form_later_%d", i))
	}
	waitArrived(floorAfter+30, 10*time.Second)
	var due time.Time
	if err := older.QueryRow(t.Context(), "SELECT next_attempt_at FROM deliveries WHERE event_id = $1", e.ID).Scan(&due); err != nil {
		t.Fatal(err)
	}
	if floor := queue.last("acme"); !floor.After(due) {
		t.Fatalf("the last claim's floor of acme %v is not past the older delivery's due time %v: the test shows nothing", floor, due)
	}
	if err := older.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	waitArrived(floorAfter+31, 5*time.Second)
}

// floorsSent is a Queue that notes the floors of the last claim sent.
type floorsSent struct {
	domain.Queue
	mu     sync.Mutex
	floors map[string]time.Time
}

func (q *floorsSent) Claim(ctx context.Context, req domain.ClaimRequest) (domain.Claimed, error) {
	q.mu.Lock()
	q.floors = req.Floors
	q.mu.Unlock()
	return q.Queue.Claim(ctx, req)
}

func (q *floorsSent) last(tenantID string) time.Time {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.floors[tenantID]
}
