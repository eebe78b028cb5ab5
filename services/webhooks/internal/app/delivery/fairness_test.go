package delivery

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/libs/postgres/pgtest"
	"github.com/customerapi/platform/services/webhooks/internal/adapters"
	"github.com/customerapi/platform/services/webhooks/internal/adapters/metrics"
	"github.com/customerapi/platform/services/webhooks/internal/adapters/secretbox"
	"github.com/customerapi/platform/services/webhooks/internal/adapters/sender"
	"github.com/customerapi/platform/services/webhooks/internal/domain"
	"github.com/customerapi/platform/services/webhooks/migrations"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// subscribeAll creates a subscription to every event type.
func subscribeAll(t *testing.T, s *adapters.Store, tenantID, id, url string) {
	t.Helper()
	now := time.Now().UTC().Truncate(time.Millisecond)
	if err := s.CreateSubscription(t.Context(), domain.Subscription{ID: id, TenantID: tenantID, URL: url, Active: true,
		Secret: "whsec_c2VjcmV0", CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
}

// enqueue records an event as the intake does: one delivery per subscription of its tenant.
func enqueue(t *testing.T, s *adapters.Store, pool *pgxpool.Pool, tenantID, subject string) events.Envelope {
	t.Helper()
	e, err := events.New(tenantID, events.TypeFormSubmitted, subject, json.RawMessage(`{"type":"form.submitted"}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := postgres.InTx(t.Context(), pool, func(tx pgx.Tx) error {
		_, err := adapters.Intake(tx).RecordEvent(t.Context(), e)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return e
}

// arrivalLog is a fast receiver that notes when each event first arrived.
type arrivalLog struct {
	mu   sync.Mutex
	at   map[string]time.Time
	want int
	all  chan struct{} // closed when want events have arrived
}

func (a *arrivalLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	var body struct {
		EventID string `json:"eventId"`
	}
	b, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(b, &body)
	a.mu.Lock()
	if _, seen := a.at[body.EventID]; !seen {
		a.at[body.EventID] = now
		if len(a.at) == a.want {
			close(a.all)
		}
	}
	a.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// A tenant with a hundred subscriptions to a receiver that answers after seconds, and a
// backlog far beyond its share, does not delay another tenant: while the first holds its
// whole share of the workers, the second tenant's deliveries to a fast receiver arrive
// with a p99 latency (enqueued to received) under a second. The engine runs with the
// service's default limits against PostgreSQL and receivers on 127.0.0.1.
func TestTenantWithSlowBacklogDoesNotDelayOthers(t *testing.T) {
	const (
		workers, perSubscription, tenantShare = 256, 8, 64 // the service's defaults
		slowSubscriptions, backlogPerSub      = 100, 10
		slowAnswer                            = 3 * time.Second // longer than the target
		fastEvents, pace                      = 40, 50 * time.Millisecond
		target                                = time.Second
	)
	pool := pgtest.NewPool(t, migrations.Set)
	store := adapters.NewStore(pool, secretbox.Ephemeral())

	var inFlight, most atomic.Int32
	saturated := make(chan struct{})
	var once sync.Once
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // then the server notices when the engine gives up
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		if n >= tenantShare {
			once.Do(func() { close(saturated) })
		}
		select {
		case <-time.After(slowAnswer):
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(slow.Close)
	fast := &arrivalLog{at: map[string]time.Time{}, want: fastEvents, all: make(chan struct{})}
	fastSrv := httptest.NewServer(fast)
	t.Cleanup(fastSrv.Close)

	for i := range slowSubscriptions {
		subscribeAll(t, store, "tenant_slow", fmt.Sprintf("whsub_slow_%03d", i), fmt.Sprintf("%s/%d", slow.URL, i))
	}
	subscribeAll(t, store, "tenant_fast", "whsub_fast", fastSrv.URL)
	for i := range backlogPerSub {
		enqueue(t, store, pool, "tenant_slow", fmt.Sprintf("form_slow_%d", i))
	}

	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	d := New(Config{Workers: workers, PerSubscription: perSubscription, TenantConcurrency: tenantShare,
		Lease: time.Minute, ClaimBatch: 100, Policy: domain.RetryPolicy{Schedule: domain.DefaultSchedule},
		DisableAfter: time.Hour, ShutdownGrace: 100 * time.Millisecond, Idle: time.Minute},
		store, sender.New(newGuard(), 10*time.Second, 2*perSubscription), &adapters.Listener{Pool: pool, Log: log}, log,
		metrics.New(prometheus.NewRegistry(), nil, log))
	runUntilCleanup(t, d)

	select {
	case <-saturated:
	case <-time.After(30 * time.Second):
		t.Fatalf("tenant A never had %d attempts in flight (most: %d)", tenantShare, most.Load())
	}
	enqueued := map[string]time.Time{}
	tick := time.NewTicker(pace)
	defer tick.Stop()
	for i := range fastEvents {
		<-tick.C
		at := time.Now()
		e := enqueue(t, store, pool, "tenant_fast", fmt.Sprintf("form_fast_%d", i))
		enqueued[e.ID] = at
	}
	select {
	case <-fast.all:
	case <-time.After(60 * time.Second):
		fast.mu.Lock()
		n := len(fast.at)
		fast.mu.Unlock()
		t.Fatalf("only %d of tenant B's %d deliveries arrived within a minute while tenant A saturated its share: "+
			"one tenant's slow backlog must not hold up another tenant's deliveries", n, fastEvents)
	}
	fast.mu.Lock()
	var lat []time.Duration
	for id, at := range fast.at {
		lat = append(lat, at.Sub(enqueued[id]))
	}
	fast.mu.Unlock()
	slices.Sort(lat)
	p99 := lat[int(math.Ceil(0.99*float64(len(lat))))-1]
	if still := inFlight.Load(); still < tenantShare/2 {
		t.Errorf("tenant A's attempts in flight fell to %d during the measurement: it no longer saturated its share", still)
	}
	if p99 >= target {
		t.Errorf("tenant B's p99 latency from enqueue to receiver was %s (median %s) while tenant A saturated its share; "+
			"the rule is under %s: one tenant's slow backlog must not delay another tenant's deliveries",
			p99, lat[len(lat)/2], target)
	}
	if m := most.Load(); m > tenantShare {
		t.Errorf("tenant A had %d attempts in flight at once: a tenant may use at most its share of %d workers", m, tenantShare)
	}
	t.Logf("tenant B: p50 %s, p99 %s, max %s; tenant A at most %d in flight", lat[len(lat)/2], p99, lat[len(lat)-1], most.Load())
}
