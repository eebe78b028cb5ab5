package adapters_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/libs/postgres/pgtest"
	"github.com/customerapi/platform/services/webhooks/internal/adapters"
	"github.com/customerapi/platform/services/webhooks/internal/adapters/secretbox"
	"github.com/customerapi/platform/services/webhooks/internal/domain"
	"github.com/customerapi/platform/services/webhooks/migrations"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func newStore(t testing.TB) (*adapters.Store, *pgxpool.Pool) {
	pool := pgtest.NewPool(t, migrations.Set)
	return adapters.NewStore(pool, secretbox.Ephemeral()), pool
}

func addSubscription(t testing.TB, s *adapters.Store, tenantID, id string, active bool, evts []string) {
	t.Helper()
	now := time.Now().UTC().Truncate(time.Millisecond)
	if err := s.CreateSubscription(context.Background(), domain.Subscription{ID: id, TenantID: tenantID,
		URL: "https://hooks.example.com/" + id, Events: evts, Active: active, Secret: "whsec_c2VjcmV0",
		CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
}

func record(t testing.TB, s *adapters.Store, pool *pgxpool.Pool, e events.Envelope) int64 {
	t.Helper()
	var n int64
	if err := postgres.InTx(context.Background(), pool, func(tx pgx.Tx) error {
		var err error
		n, err = adapters.Intake(tx).RecordEvent(context.Background(), e)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

func newEvent(t testing.TB, tenantID, typ, subject string) events.Envelope {
	t.Helper()
	e, err := events.New(tenantID, typ, subject, json.RawMessage(`{"type":"`+typ+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// The intake matches active subscriptions of the event's tenant that list its type, and
// an event recorded twice (even past the consumer's inbox) adds no delivery.
func TestRecordEventMatchesAndIsIdempotent(t *testing.T) {
	s, pool := newStore(t)
	addSubscription(t, s, "acme", "whsub_all", true, nil)
	addSubscription(t, s, "acme", "whsub_forms", true, []string{events.TypeFormSubmitted})
	addSubscription(t, s, "acme", "whsub_pages", true, []string{events.TypePageVersionCreated})
	addSubscription(t, s, "acme", "whsub_off", false, nil)
	addSubscription(t, s, "globex", "whsub_other", true, nil)
	e := newEvent(t, "acme", events.TypeFormSubmitted, "form_1")
	if n := record(t, s, pool, e); n != 2 {
		t.Fatalf("recorded %d deliveries, want 2", n)
	}
	if n := record(t, s, pool, e); n != 0 {
		t.Fatalf("the same event again recorded %d deliveries", n)
	}
	var subs []string
	rows, _ := pool.Query(context.Background(), "SELECT subscription_id FROM deliveries ORDER BY subscription_id")
	subs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || fmt.Sprint(subs) != "[whsub_all whsub_forms]" {
		t.Fatalf("deliveries for %v (%v)", subs, err)
	}
	bad := e
	bad.ID, bad.Payload = "evt_bad", json.RawMessage(`{"type":"form.enriched"}`)
	if err := postgres.InTx(context.Background(), pool, func(tx pgx.Tx) error {
		_, err := adapters.Intake(tx).RecordEvent(context.Background(), bad)
		return err
	}); err == nil {
		t.Fatal("a payload whose type differs from the event's was recorded")
	}
}

func fill(t testing.TB, s *adapters.Store, pool *pgxpool.Pool, subs []string, perSub int) {
	t.Helper()
	for _, sub := range subs {
		addSubscription(t, s, "acme", sub, true, []string{"form.submitted"})
	}
	for i := 0; i < perSub; i++ {
		for _, sub := range subs {
			e := newEvent(t, "acme", events.TypeFormSubmitted, fmt.Sprintf("form_%s_%d", sub, i))
			// One subscription per event here: make the others skip it.
			if _, err := pool.Exec(context.Background(), "UPDATE subscriptions SET active = (subscription_id = $1)", sub); err != nil {
				t.Fatal(err)
			}
			record(t, s, pool, e)
		}
	}
	if _, err := pool.Exec(context.Background(), "UPDATE subscriptions SET active = true"); err != nil {
		t.Fatal(err)
	}
}

// claim leases up to limit deliveries, at most perSub of a subscription, none of exclude,
// with every tenant's room unbounded, and returns the claim.
func claim(t testing.TB, s *adapters.Store, limit, perSub int, exclude []string, lease time.Duration) domain.Claimed {
	t.Helper()
	c, err := s.Claim(context.Background(), domain.ClaimRequest{Limit: limit, PerSubscription: perSub, Exclude: exclude,
		Tenants: 100, DefaultRoom: 1 << 20, Lease: lease})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// completeAll records a result of status without an attempt for every job (pending: the
// claims are given back).
func completeAll(t testing.TB, s *adapters.Store, jobs []domain.Job, status domain.Status) {
	t.Helper()
	results := make([]domain.Result, len(jobs))
	for i, j := range jobs {
		results[i] = domain.Result{TenantID: j.TenantID, DeliveryID: j.DeliveryID, SubscriptionID: j.SubscriptionID,
			LeaseToken: j.LeaseToken, AttemptNo: j.AttemptNo, Status: status}
	}
	if _, err := s.Complete(context.Background(), results, time.Hour); err != nil {
		t.Fatal(err)
	}
}

// Replicas claiming at once never get the same delivery, and together get all of them.
func TestClaimIsExclusiveUnderConcurrency(t *testing.T) {
	s, pool := newStore(t)
	fill(t, s, pool, []string{"whsub_a", "whsub_b", "whsub_c", "whsub_d"}, 50)
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				c, err := s.Claim(context.Background(), domain.ClaimRequest{Limit: 7, PerSubscription: 1000,
					Tenants: 100, DefaultRoom: 1000, Lease: time.Minute})
				if err != nil {
					t.Error(err)
					return
				}
				jobs := c.Jobs
				if len(jobs) == 0 {
					return
				}
				mu.Lock()
				for _, j := range jobs {
					seen[j.DeliveryID]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != 200 {
		t.Fatalf("claimed %d of 200", len(seen))
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("%s claimed %d times", id, n)
		}
	}
}

func TestClaimLimitsPerSubscriptionAndHonoursExclusions(t *testing.T) {
	s, pool := newStore(t)
	fill(t, s, pool, []string{"whsub_a", "whsub_b"}, 10)
	jobs := claim(t, s, 100, 3, nil, time.Minute).Jobs
	per := map[string]int{}
	var lastSeq int64
	for _, j := range jobs {
		per[j.SubscriptionID]++
		if j.Seq < lastSeq {
			t.Fatal("claims are not in due order")
		}
		lastSeq = j.Seq
		if j.AttemptNo != 1 || j.LeaseToken != 1 || !j.Active || j.URL == "" || len(j.Body) == 0 {
			t.Fatalf("job %+v", j)
		}
	}
	if per["whsub_a"] != 3 || per["whsub_b"] != 3 {
		t.Fatalf("per subscription %v", per)
	}
	jobs = claim(t, s, 100, 3, []string{"whsub_a"}, time.Minute).Jobs
	if len(jobs) != 3 {
		t.Fatalf("claimed %d deliveries of whsub_b, want its limit of 3", len(jobs))
	}
	for _, j := range jobs {
		if j.SubscriptionID != "whsub_b" {
			t.Fatalf("claimed %s despite the exclusion", j.SubscriptionID)
		}
	}
	// Deliveries due now are the claims' business; held ones come back when their lease
	// runs out, and Upcoming says when.
	up, err := s.Upcoming(context.Background(), 10)
	if wait := up.LeaseEnd.Sub(up.Now); err != nil || len(up.Due) != 0 || wait < 50*time.Second || wait > time.Minute {
		t.Fatalf("upcoming %+v (%v), want nothing due later and the lease's end in a minute", up, err)
	}
}

// Upcoming names the earliest due times still to come, in due order, with their
// tenants (the engine visits each tenant when its time comes), not those due already,
// and at most as many as asked.
func TestUpcomingNamesTheTenantsOfTheDueTimesToCome(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	for _, tenant := range []string{"acme", "beta"} {
		addSubscription(t, s, tenant, "whsub_"+tenant, true, nil)
		for i := range 2 {
			record(t, s, pool, newEvent(t, tenant, events.TypeFormSubmitted, fmt.Sprintf("form_%d", i)))
		}
	}
	// acme's first in 3 s, beta's first in 1 s, acme's second in 2 s; beta's second stays due now.
	if _, err := pool.Exec(ctx, `UPDATE deliveries d SET next_attempt_at = now() + make_interval(secs => v.secs), retry_step = 1
		FROM (SELECT delivery_id, CASE WHEN tenant_id = 'acme' THEN 4 - row_number() OVER (PARTITION BY tenant_id ORDER BY seq)
			ELSE 1 END AS secs, row_number() OVER (PARTITION BY tenant_id ORDER BY seq) AS n, tenant_id FROM deliveries) AS v
		WHERE d.delivery_id = v.delivery_id AND (v.tenant_id = 'acme' OR v.n = 1)`); err != nil {
		t.Fatal(err)
	}
	up, err := s.Upcoming(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(up.Due) != 2 || up.Due[0].TenantID != "beta" || up.Due[1].TenantID != "acme" {
		t.Fatalf("upcoming %+v, want beta's retry in 1 s, then acme's in 2 s", up.Due)
	}
	if wait := up.Due[0].At.Sub(up.Now); wait < 900*time.Millisecond || wait > time.Second {
		t.Errorf("the first due time to come is %s after the database's clock, want 1 s", wait)
	}
	if !up.Due[0].At.Before(up.Due[1].At) {
		t.Errorf("due times %v, want in due order", up.Due)
	}
	if all, _ := s.Upcoming(ctx, 10); len(all.Due) != 3 {
		t.Errorf("upcoming %+v, want the three due later than now, not the one due now", all.Due)
	}
}

// A lease that runs out lets another claim take the delivery; the first claim's late
// result then records its attempt but does not change the delivery.
func TestExpiredLeaseIsClaimedAgain(t *testing.T) {
	s, pool := newStore(t)
	fill(t, s, pool, []string{"whsub_a"}, 1)
	// A lease long enough that the claim right after it falls inside it on a loaded
	// machine (100 ms was not: make test beside a kind cluster claimed it again).
	const lease = 2 * time.Second
	start := time.Now()
	first := claim(t, s, 10, 10, nil, lease).Jobs
	if len(first) != 1 {
		t.Fatalf("%v", first)
	}
	if again := claim(t, s, 10, 10, nil, time.Minute).Jobs; len(again) != 0 && time.Since(start) < lease {
		t.Fatal("claimed while leased")
	}
	time.Sleep(time.Until(start.Add(lease + 100*time.Millisecond))) // the clock must pass the end of the lease
	second := claim(t, s, 10, 10, nil, time.Minute).Jobs
	if len(second) != 1 || second[0].DeliveryID != first[0].DeliveryID || second[0].AttemptNo != 2 {
		t.Fatalf("%+v", second)
	}
	code := 500
	at := time.Now().UTC().Truncate(time.Millisecond)
	stale := domain.Result{TenantID: "acme", DeliveryID: first[0].DeliveryID, SubscriptionID: "whsub_a",
		LeaseToken: first[0].LeaseToken, AttemptNo: first[0].AttemptNo, Status: domain.StatusFailed,
		Attempt: &domain.Attempt{AttemptedAt: at, StatusCode: &code}}
	if _, err := s.Complete(context.Background(), []domain.Result{stale}, time.Hour); err != nil {
		t.Fatal(err)
	}
	d, err := s.GetDelivery(context.Background(), "acme", "whsub_a", first[0].DeliveryID)
	if err != nil || d.Status != domain.StatusPending || len(d.Attempts) != 1 || !d.InFlight {
		t.Fatalf("after the stale result: %+v %v", d, err)
	}
	ok := 200
	fresh := stale
	fresh.LeaseToken, fresh.AttemptNo, fresh.Status = second[0].LeaseToken, second[0].AttemptNo, domain.StatusSucceeded
	fresh.Attempt = &domain.Attempt{AttemptedAt: at, StatusCode: &ok}
	if _, err := s.Complete(context.Background(), []domain.Result{fresh}, time.Hour); err != nil {
		t.Fatal(err)
	}
	d, _ = s.GetDelivery(context.Background(), "acme", "whsub_a", first[0].DeliveryID)
	if d.Status != domain.StatusSucceeded || len(d.Attempts) != 2 || d.InFlight || d.NextAttemptAt != nil {
		t.Fatalf("after the fresh result: %+v", d)
	}
}

// A 410 disables the subscription and fails its other pending deliveries in the same
// transaction; a retry result of a now inactive subscription fails as well.
func TestCompleteDisablesOnGone(t *testing.T) {
	s, pool := newStore(t)
	fill(t, s, pool, []string{"whsub_a"}, 3)
	jobs := claim(t, s, 2, 10, nil, time.Minute).Jobs
	if len(jobs) != 2 {
		t.Fatal(jobs)
	}
	code, at := 410, time.Now().UTC().Truncate(time.Millisecond)
	gone := domain.Result{TenantID: "acme", DeliveryID: jobs[0].DeliveryID, SubscriptionID: "whsub_a",
		LeaseToken: jobs[0].LeaseToken, AttemptNo: 1, Status: domain.StatusFailed, Gone: true,
		Attempt: &domain.Attempt{AttemptedAt: at, StatusCode: &code}}
	c500 := 500
	retry := domain.Result{TenantID: "acme", DeliveryID: jobs[1].DeliveryID, SubscriptionID: "whsub_a",
		LeaseToken: jobs[1].LeaseToken, AttemptNo: 1, Status: domain.StatusPending, Delay: time.Second, RetryStep: 1,
		Attempt: &domain.Attempt{AttemptedAt: at, StatusCode: &c500}}
	disabled, err := s.Complete(context.Background(), []domain.Result{gone, retry}, time.Hour)
	if err != nil || len(disabled) != 1 || !disabled[0].Gone || disabled[0].Reason != domain.ReasonGone {
		t.Fatalf("disabled %+v, %v", disabled, err)
	}
	sub, _ := s.GetSubscription(context.Background(), "acme", "whsub_a")
	if sub.Active || sub.DisabledReason == nil || sub.DisabledAt == nil {
		t.Fatalf("subscription %+v", sub)
	}
	var pending int
	if err := pool.QueryRow(context.Background(), "SELECT count(*) FROM deliveries WHERE status = 'pending'").Scan(&pending); err != nil || pending != 0 {
		t.Fatalf("%d deliveries still pending (%v)", pending, err)
	}
	if up, err := s.Upcoming(context.Background(), 10); err != nil || len(up.Due) != 0 || !up.LeaseEnd.IsZero() {
		t.Fatalf("upcoming %+v (%v), want nothing", up, err)
	}
}

// Failures without a success for the configured period disable the subscription; a
// success restarts the streak.
func TestFailureStreakDisables(t *testing.T) {
	s, pool := newStore(t)
	fill(t, s, pool, []string{"whsub_a"}, 4)
	base := time.Now().UTC().Truncate(time.Millisecond)
	attempt := func(j domain.Job, at time.Time, code int, status domain.Status) domain.Result {
		return domain.Result{TenantID: "acme", DeliveryID: j.DeliveryID, SubscriptionID: "whsub_a", LeaseToken: j.LeaseToken,
			AttemptNo: j.AttemptNo, Status: status, Delay: time.Hour, RetryStep: 1,
			Attempt: &domain.Attempt{AttemptedAt: at, StatusCode: &code}}
	}
	jobs := claim(t, s, 4, 10, nil, time.Minute).Jobs
	// Failing for 3 days, then a success: the streak restarts.
	d, err := s.Complete(context.Background(), []domain.Result{
		attempt(jobs[0], base, 500, domain.StatusPending),
		attempt(jobs[1], base.Add(72*time.Hour), 200, domain.StatusSucceeded),
	}, 120*time.Hour)
	if err != nil || len(d) != 0 {
		t.Fatal(d, err)
	}
	// Failing from day 3 to day 7: four days, not yet five.
	if d, err := s.Complete(context.Background(), []domain.Result{attempt(jobs[2], base.Add(96*time.Hour), 500, domain.StatusPending)}, 120*time.Hour); err != nil || len(d) != 0 {
		t.Fatal(d, err)
	}
	d, err = s.Complete(context.Background(), []domain.Result{attempt(jobs[3], base.Add(196*time.Hour), 500, domain.StatusPending)}, 120*time.Hour)
	if err != nil || len(d) != 0 {
		t.Fatalf("disabled after 100 hours: %+v %v", d, err)
	}
	// The next failure, 121 hours into the streak, disables it.
	if _, err := pool.Exec(context.Background(), "UPDATE deliveries SET next_attempt_at = now() WHERE status = 'pending'"); err != nil {
		t.Fatal(err)
	}
	jobs = claim(t, s, 1, 10, nil, time.Minute).Jobs
	d, err = s.Complete(context.Background(), []domain.Result{attempt(jobs[0], base.Add(217*time.Hour), 500, domain.StatusPending)}, 120*time.Hour)
	if err != nil || len(d) != 1 || d[0].Gone {
		t.Fatalf("not disabled after 121 hours: %+v %v", d, err)
	}
	sub, _ := s.GetSubscription(context.Background(), "acme", "whsub_a")
	if sub.Active || *sub.DisabledReason != domain.ReasonFailing(120*time.Hour, base.Add(96*time.Hour)) {
		t.Fatalf("subscription %+v", sub)
	}
}

// An event matching more subscriptions than one statement's IDs still reaches them all.
func TestRecordEventFansOutBeyondOneRound(t *testing.T) {
	s, pool := newStore(t)
	for i := 0; i < 40; i++ {
		addSubscription(t, s, "acme", fmt.Sprintf("whsub_%02d", i), true, nil)
	}
	e := newEvent(t, "acme", events.TypeFormEnriched, "form_1")
	if n := record(t, s, pool, e); n != 40 {
		t.Fatalf("recorded %d deliveries, want 40", n)
	}
	if n := record(t, s, pool, e); n != 0 {
		t.Fatalf("the event again recorded %d", n)
	}
	var distinct int
	if err := pool.QueryRow(context.Background(), "SELECT count(DISTINCT delivery_id) FROM deliveries").Scan(&distinct); err != nil || distinct != 40 {
		t.Fatalf("%d distinct delivery IDs (%v)", distinct, err)
	}
}

func TestStatsAndRetention(t *testing.T) {
	s, pool := newStore(t)
	ctx := context.Background()
	if st, err := s.Stats(ctx); err != nil || st != (domain.QueueStats{}) {
		t.Fatalf("empty queue: %+v %v", st, err)
	}
	fill(t, s, pool, []string{"whsub_a"}, 3)
	if _, err := pool.Exec(ctx, "UPDATE deliveries SET created_at = now() - interval '1 hour', next_attempt_at = now() - interval '10 minutes'"); err != nil {
		t.Fatal(err)
	}
	st, err := s.Stats(ctx)
	if err != nil || st.Pending != 3 || st.OldestPendingAge < 59*time.Minute || st.DispatchLag < 9*time.Minute {
		t.Fatalf("stats %+v %v", st, err)
	}
	// Finish two: one long ago, one just now.
	jobs := claim(t, s, 2, 10, nil, time.Minute).Jobs
	code, at := 200, time.Now().UTC().Truncate(time.Millisecond)
	var results []domain.Result
	for _, j := range jobs {
		results = append(results, domain.Result{TenantID: "acme", DeliveryID: j.DeliveryID, SubscriptionID: j.SubscriptionID,
			LeaseToken: j.LeaseToken, AttemptNo: j.AttemptNo, Status: domain.StatusSucceeded,
			Attempt: &domain.Attempt{AttemptedAt: at, StatusCode: &code}})
	}
	if _, err := s.Complete(ctx, results, time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "UPDATE deliveries SET updated_at = now() - interval '40 days' WHERE delivery_id = $1", jobs[0].DeliveryID); err != nil {
		t.Fatal(err)
	}
	n, err := s.PurgeFinished(ctx, time.Now().Add(-30*24*time.Hour), 1000)
	if err != nil || n != 1 {
		t.Fatalf("purged %d (%v)", n, err)
	}
	var left, attempts int
	if err := pool.QueryRow(ctx, "SELECT (SELECT count(*) FROM deliveries), (SELECT count(*) FROM delivery_attempts)").Scan(&left, &attempts); err != nil ||
		left != 2 || attempts != 1 {
		t.Fatalf("%d deliveries and %d attempts left (%v)", left, attempts, err)
	}
}

// The queue gauges are read at every scrape of every replica, so their statements must
// cost the same however many deliveries wait: with the queue they grew to 0.3 s at
// 1,000,000 pending and would pass the scrape's timeout near ten times that, and the
// gauges, with the stuck-delivery alert that watches one of them, would vanish when a
// backlog needs them most. Beyond adapters.ExactDepth the depth is the planner's estimate.
func TestQueueStatsCostTheSameWithABacklog(t *testing.T) {
	ctx := context.Background()
	_, pool := newStore(t)
	sent := &pgtest.StatementLog{}
	s := adapters.NewStore(pgtest.Traced(t, pool, sent), secretbox.Ephemeral())
	addSubscription(t, s, "acme", "whsub_a", true, nil)
	// pend adds n pending deliveries made in the last hour, none due, and ANALYZEs the
	// table (as autovacuum does after a bulk of inserts).
	added := 0
	pend := func(n int) {
		t.Helper()
		if _, err := pool.Exec(ctx, `INSERT INTO deliveries (tenant_id, delivery_id, subscription_id, event_id, event_type,
			ordering_key, body, status, next_attempt_at, created_at, updated_at)
			SELECT 'acme', 'whdel_' || i, 'whsub_a', 'evt_' || i, 'form.submitted', 'form_' || i, '\x7b7d', 'pending',
				now() + interval '1 hour', now() - (i % 3600) * interval '1 second', now()
			FROM generate_series($1::int, $2::int) AS i`, added+1, added+n); err != nil {
			t.Fatal(err)
		}
		added += n
		if _, err := pool.Exec(ctx, "ANALYZE deliveries"); err != nil {
			t.Fatal(err)
		}
	}
	// read reads the gauges and the pages their statements touch, each sent again under
	// EXPLAIN (ANALYZE, BUFFERS).
	read := func() (domain.QueueStats, int) {
		t.Helper()
		sent.Take()
		st, err := s.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pages := 0
		for _, r := range sent.Take() {
			if strings.HasPrefix(r.SQL, "EXPLAIN") {
				continue // the estimate reads no rows
			}
			run, err := pgtest.Explain(ctx, pool, r)
			if err != nil {
				t.Fatal(err)
			}
			pages += run.Pages
		}
		return st, pages
	}

	pend(2000)
	if st, _ := read(); st.Pending != 2000 {
		t.Fatalf("with 2,000 pending the depth read %d: below %d it must be exact", st.Pending, adapters.ExactDepth)
	}
	pend(18000)
	_, small := read()
	// The oldest pending delivery, two hours old, and one due for ten minutes.
	if _, err := pool.Exec(ctx, `UPDATE deliveries SET created_at = now() - interval '2 hours' WHERE delivery_id = 'whdel_7';
		UPDATE deliveries SET next_attempt_at = now() - interval '10 minutes' WHERE delivery_id = 'whdel_11'`); err != nil {
		t.Fatal(err)
	}
	pend(60000)
	st, large := read()
	if st.Pending < 64000 || st.Pending > 96000 {
		t.Errorf("with 80,000 pending the depth read %d: the planner's estimate should be within a fifth", st.Pending)
	}
	if st.OldestPendingAge < 119*time.Minute || st.OldestPendingAge > 121*time.Minute {
		t.Errorf("oldest pending age %v, want the 2 hours of the oldest delivery", st.OldestPendingAge)
	}
	if st.DispatchLag < 9*time.Minute || st.DispatchLag > 11*time.Minute {
		t.Errorf("dispatch lag %v, want the 10 minutes of the one due delivery", st.DispatchLag)
	}
	t.Logf("pages touched by the gauges' statements: %d with 20,000 pending, %d with 80,000", small, large)
	if large > small+small/4+10 {
		t.Errorf("reading the gauges touched %d pages with 20,000 deliveries pending and %d with 80,000: "+
			"their cost must not grow with the queue", small, large)
	}
}

// backlog gives tenantID the subscriptions subs and records n events of it, each
// delivered to every one of them.
func backlog(t testing.TB, s *adapters.Store, pool *pgxpool.Pool, tenantID string, subs []string, n int) {
	t.Helper()
	for _, sub := range subs {
		addSubscription(t, s, tenantID, sub, true, nil)
	}
	for i := 0; i < n; i++ {
		record(t, s, pool, newEvent(t, tenantID, events.TypeFormSubmitted, fmt.Sprintf("form_%s_%d", tenantID, i)))
	}
}

// countByTenant counts the jobs of each tenant.
func countByTenant(jobs []domain.Job) map[string]int {
	n := map[string]int{}
	for _, j := range jobs {
		n[j.TenantID]++
	}
	return n
}

// The fair claim rule. A tenant never gets more than its room, even with the biggest
// backlog; alone on the system it gets all of its room in one claim; and tenants take
// turns: a claim gives each tenant with due deliveries an equal part, and claims of one
// delivery each go round the tenants, although the first tenant's deliveries are all due
// before the others'.
func TestClaimTakesTenantsInTurn(t *testing.T) {
	ctx := context.Background()
	req := func(limit int, after string, rooms map[string]int, defaultRoom int) domain.ClaimRequest {
		return domain.ClaimRequest{Limit: limit, PerSubscription: 100, After: after, Tenants: 100,
			Rooms: rooms, DefaultRoom: defaultRoom, Lease: time.Minute}
	}

	// Alone, a tenant with a backlog gets its whole room, and never more.
	s, pool := newStore(t)
	backlog(t, s, pool, "acme", []string{"whsub_a1", "whsub_a2"}, 30) // 60 due
	c, err := s.Claim(ctx, req(100, "", nil, 25))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Jobs) != 25 {
		t.Fatalf("a tenant alone with 60 due deliveries and room for 25 got %d: alone it must get its whole room", len(c.Jobs))
	}
	c, err = s.Claim(ctx, req(100, c.After, map[string]int{"acme": 5}, 25))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Jobs) != 5 {
		t.Fatalf("a tenant with room for 5 more got %d: a claim must never exceed a tenant's room", len(c.Jobs))
	}
	if c, err = s.Claim(ctx, req(100, c.After, map[string]int{"acme": 0}, 25)); err != nil || len(c.Jobs) != 0 {
		t.Fatalf("a tenant without room got %d deliveries (%v): a claim must never exceed a tenant's room", len(c.Jobs), err)
	}

	// Three tenants; the first one's deliveries are all due before the others'.
	s, pool = newStore(t)
	backlog(t, s, pool, "acme", []string{"whsub_a1", "whsub_a2"}, 30)
	backlog(t, s, pool, "globex", []string{"whsub_g"}, 10)
	backlog(t, s, pool, "initech", []string{"whsub_i"}, 10)
	c, err = s.Claim(ctx, req(9, "", nil, 100))
	if err != nil {
		t.Fatal(err)
	}
	if n := countByTenant(c.Jobs); n["acme"] != 3 || n["globex"] != 3 || n["initech"] != 3 {
		t.Fatalf("a claim of 9 gave %v: each of three tenants with due deliveries must get an equal part", n)
	}
	var turns []string
	after := c.After
	for range 6 {
		c, err := s.Claim(ctx, req(1, after, nil, 100))
		if err != nil || len(c.Jobs) != 1 {
			t.Fatalf("claim of one: %v, %v", c.Jobs, err)
		}
		turns, after = append(turns, c.Jobs[0].TenantID), c.After
	}
	if fmt.Sprint(turns) != "[acme globex initech acme globex initech]" {
		t.Fatalf("claims of one delivery went to %v: they must go round the tenants in turn", turns)
	}
	// Within a tenant, deliveries go in due order.
	c, err = s.Claim(ctx, req(100, after, map[string]int{"globex": 0, "initech": 0}, 100))
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(c.Jobs); i++ {
		if c.Jobs[i].Seq < c.Jobs[i-1].Seq {
			t.Fatal("a tenant's deliveries were not claimed in due order")
		}
	}

	// A claim visits at most Tenants tenants; the next goes on where it stopped.
	s, pool = newStore(t)
	for _, tenant := range []string{"t1", "t2", "t3"} {
		backlog(t, s, pool, tenant, []string{"whsub_" + tenant}, 2)
	}
	r := req(100, "", nil, 100)
	r.Tenants = 2
	c, err = s.Claim(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if n := countByTenant(c.Jobs); n["t1"] != 2 || n["t2"] != 2 || len(n) != 2 || !c.Unvisited || c.After != "t2" {
		t.Fatalf("a claim bounded to 2 tenants got %v (unvisited %v, after %q): it must take the first two and say where it stopped",
			n, c.Unvisited, c.After)
	}
	r.After = c.After
	if c, err = s.Claim(ctx, r); err != nil || countByTenant(c.Jobs)["t3"] != 2 {
		t.Fatalf("the next claim got %v (%v): it must go on with the tenant after the last one visited", countByTenant(c.Jobs), err)
	}
	// A tenant the replica is busy with (listed with room) is visited wherever the turn
	// stands.
	for _, tenant := range []string{"t1", "t2", "t3"} {
		record(t, s, pool, newEvent(t, tenant, events.TypeFormSubmitted, "form_more_"+tenant))
	}
	r.Tenants, r.After, r.Rooms = 1, "t1", map[string]int{"t1": 5}
	if c, err = s.Claim(ctx, r); err != nil || fmt.Sprint(countByTenant(c.Jobs)) != "map[t1:1 t2:1]" {
		t.Fatalf("a claim exploring one tenant after t1 got %v (%v): it must take t2's and, as the replica is busy with t1, t1's",
			countByTenant(c.Jobs), err)
	}
}

// A finished delivery leaves dead entries at the front of its tenant's part of the
// queue's index until vacuum removes them, thousands at a high rate, and every probe of
// the tenant walks them to find its first live entry. A claim probes each tenant once,
// wherever its turn begins and whether or not the replica is busy with the tenant.
func TestClaimWalksATenantsFinishedDeliveriesOnce(t *testing.T) {
	ctx := context.Background()
	log := &pgtest.StatementLog{}
	pool, err := postgres.ConnectWith(ctx, pgtest.NewDatabase(t), func(c *pgxpool.Config) { c.ConnConfig.Tracer = log })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := postgres.Migrate(ctx, pool, nil, migrations.Set); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "ALTER TABLE deliveries SET (autovacuum_enabled = off)"); err != nil {
		t.Fatal(err)
	}
	s := adapters.NewStore(pool, secretbox.Ephemeral())
	addSubscription(t, s, "acme", "whsub_a", true, nil)
	addSubscription(t, s, "globex", "whsub_g", true, nil)
	const finished = 10000
	if _, err := pool.Exec(ctx, `INSERT INTO deliveries (tenant_id, delivery_id, subscription_id, event_id, event_type,
			ordering_key, body, status, next_attempt_at, created_at, updated_at)
		SELECT 'acme', 'whdel_' || i, 'whsub_a', 'evt_' || i, 'form.submitted', 'form_' || i % 100, '\x00', 'pending',
			now() - interval '1 hour' + i * interval '1 millisecond', now(), now()
		FROM generate_series(1, $1::int) AS i`, finished); err != nil {
		t.Fatal(err)
	}
	// Each goes through a claim and a successful attempt, as in service.
	take := domain.ClaimRequest{Limit: 500, PerSubscription: 500, Tenants: 64, DefaultRoom: 500, Lease: time.Minute}
	for done := 0; done < finished; {
		c, err := s.Claim(ctx, take)
		if err != nil || len(c.Jobs) == 0 {
			t.Fatalf("claim after %d of %d: %d jobs, %v", done, finished, len(c.Jobs), err)
		}
		completeAll(t, s, c.Jobs, domain.StatusSucceeded)
		done += len(c.Jobs)
	}
	record(t, s, pool, newEvent(t, "acme", events.TypeFormSubmitted, "form_new"))
	record(t, s, pool, newEvent(t, "globex", events.TypeFormSubmitted, "form_new"))

	// walks claims with req inside a transaction rolled back, and returns the claim and
	// the probes of the queue's index that walked acme's finished deliveries' entries.
	walks := func(req domain.ClaimRequest) (domain.Claimed, []string) {
		t.Helper()
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(ctx) }()
		log.Take()
		c, err := adapters.ClaimIn(ctx, tx, req)
		sent := log.Take()
		if err != nil {
			t.Fatal(err)
		}
		var plan []map[string]any
		if err := tx.QueryRow(ctx, "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) "+sent[0].SQL, sent[0].Args...).Scan(&plan); err != nil {
			t.Fatal(err)
		}
		// The tenant's 10,000 finished deliveries left 20,000 dead index entries (the
		// claim's update and the attempt's each leave one): about 280 pages. A probe of
		// globex, or one that starts at a floor or at the earliest entry found, reads a few.
		var walked []string
		var each func(n map[string]any)
		each = func(n map[string]any) {
			pages := n["Shared Hit Blocks"].(float64) + n["Shared Read Blocks"].(float64)
			if n["Index Name"] == "deliveries_tenant_due" && pages > 40 {
				walked = append(walked, fmt.Sprintf("%v pages (%v)", pages, n["Index Cond"]))
			}
			kids, _ := n["Plans"].([]any)
			for _, k := range kids {
				each(k.(map[string]any))
			}
		}
		each(plan[0]["Plan"].(map[string]any))
		return c, walked
	}

	busy := map[string]int{"acme": 10}
	for _, tc := range []struct {
		name    string
		after   string
		tenants int
		rooms   map[string]int
	}{
		{"turn from the start", "", 64, nil},
		{"turn wrapping round to acme", "acme", 64, nil},
		{"turn from between the tenants", "b", 64, nil},
		{"replica busy with acme", "acme", 64, busy},
		{"replica busy with acme, turn bounded to globex", "acme", 1, busy},
	} {
		req := domain.ClaimRequest{Limit: 10, PerSubscription: 10, After: tc.after, Tenants: tc.tenants,
			Rooms: tc.rooms, DefaultRoom: 10, Lease: time.Minute}
		c, walked := walks(req)
		// Bounded to one tenant, the turn reaches globex and acme comes as the busy tenant.
		if got := fmt.Sprint(countByTenant(c.Jobs)); got != "map[acme:1 globex:1]" {
			t.Fatalf("%s: claimed %s, want each tenant's new delivery", tc.name, got)
		}
		if len(walked) != 1 {
			t.Errorf("%s: the claim walked acme's %d finished deliveries' index entries %d times, want once:\n%s",
				tc.name, finished, len(walked), strings.Join(walked, "\n"))
		}
		// With the floors that claim found, the next one walks them not at all.
		if c.Floors["acme"].IsZero() || c.Floors["globex"].IsZero() {
			t.Fatalf("%s: the claim's floors %v lack a tenant it probed", tc.name, c.Floors)
		}
		req.Floors = c.Floors
		c, walked = walks(req)
		if got := fmt.Sprint(countByTenant(c.Jobs)); got != "map[acme:1 globex:1]" {
			t.Fatalf("%s, with floors %v: claimed %s, want each tenant's new delivery", tc.name, req.Floors, got)
		}
		if len(walked) != 0 {
			t.Errorf("%s, with floors: the claim walked acme's finished deliveries' index entries:\n%s",
				tc.name, strings.Join(walked, "\n"))
		}
	}
}

// Floors change where a claim's probes of a tenant start, not which tenants it finds or
// in what order: tenants with floors and tenants without take their turns as before, a
// claim bounded to fewer tenants goes on where it stopped, and the claim reports a floor
// for every tenant it probed: its earliest pending due time, or the claim's time when
// nothing is pending.
func TestClaimWithFloorsGoesRoundEveryTenant(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	for _, tenant := range []string{"t1", "t2", "t3", "t4", "t5"} {
		backlog(t, s, pool, tenant, []string{"whsub_" + tenant}, 1)
	}
	addSubscription(t, s, "t6", "whsub_t6", true, nil) // nothing pending
	long := time.Now().Add(-time.Hour)
	floors := map[string]time.Time{"t2": long, "t4": long, "t6": long}
	req := func(limit int, after string, tenants int) domain.ClaimRequest {
		return domain.ClaimRequest{Limit: limit, PerSubscription: 10, After: after, Tenants: tenants,
			DefaultRoom: 10, Lease: time.Minute, Floors: floors}
	}

	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	c, err := adapters.ClaimIn(ctx, tx, req(0, "", 64))
	_ = tx.Rollback(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var due time.Time
	if err := pool.QueryRow(ctx, "SELECT next_attempt_at FROM deliveries WHERE tenant_id = 't3'").Scan(&due); err != nil {
		t.Fatal(err)
	}
	if len(c.Floors) != 6 || !c.Floors["t3"].Equal(due) || c.Floors["t6"].Before(began.Add(-time.Second)) {
		t.Fatalf("a claim probing six tenants reported floors %v: want t3's at its delivery's due time %v, and t6's, "+
			"which has nothing pending, at the claim's time", c.Floors, due)
	}

	var turns []string
	after := "t3"
	for range 5 {
		c, err := s.Claim(ctx, req(1, after, 64))
		if err != nil || len(c.Jobs) != 1 {
			t.Fatalf("claim of one after %s: %v, %v", after, c.Jobs, err)
		}
		turns, after = append(turns, c.Jobs[0].TenantID), c.After
	}
	if fmt.Sprint(turns) != "[t4 t5 t1 t2 t3]" {
		t.Fatalf("claims of one from t3 went to %v: with floors for t2, t4 and t6, they must still go round in turn", turns)
	}

	for _, tenant := range []string{"t1", "t2", "t3", "t4", "t5"} {
		record(t, s, pool, newEvent(t, tenant, events.TypeFormSubmitted, "form_more_"+tenant))
	}
	c, err = s.Claim(ctx, req(100, "", 2))
	if err != nil || fmt.Sprint(countByTenant(c.Jobs)) != "map[t1:1 t2:1]" || !c.Unvisited || c.After != "t2" {
		t.Fatalf("a claim bounded to 2 tenants got %v (%v, unvisited %v, after %q): want t1 and t2", countByTenant(c.Jobs),
			err, c.Unvisited, c.After)
	}
	if c, err = s.Claim(ctx, req(100, c.After, 2)); err != nil || fmt.Sprint(countByTenant(c.Jobs)) != "map[t3:1 t4:1]" {
		t.Fatalf("the next claim got %v (%v): want t3 and t4", countByTenant(c.Jobs), err)
	}
}

// A notification of new deliveries names their tenant and says when they are due, as
// the intake, a test event, a retry by hand and claims given back (a replica shutting
// down) send it; one of a replica of an earlier version names the tenant alone.
func TestNotificationsSayWhenDeliveriesAreDue(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "LISTEN "+adapters.Channel); err != nil {
		t.Fatal(err)
	}
	check := func(how string, want time.Time) {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		n, err := conn.Conn().WaitForNotification(wctx)
		if err != nil {
			t.Fatalf("%s: %v", how, err)
		}
		if tenant, due, known := adapters.ParseNotification(n.Payload); tenant != "acme" || !known || !due.Equal(want) {
			t.Fatalf("%s: the notification %q reads as %q due %v (%v), want acme due %v", how, n.Payload, tenant, due, known, want)
		}
	}
	addSubscription(t, s, "acme", "whsub_a", true, nil)
	e := newEvent(t, "acme", events.TypeFormSubmitted, "form_1")
	record(t, s, pool, e)
	var id string
	var due time.Time
	if err := pool.QueryRow(ctx, "SELECT delivery_id, next_attempt_at FROM deliveries WHERE event_id = $1", e.ID).
		Scan(&id, &due); err != nil {
		t.Fatal(err)
	}
	check("the intake", due)

	d, err := s.RecordTestDelivery(ctx, "acme", "whsub_a", "whdel_test", "evt_test", "webhook.test", []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	check("a test event", *d.NextAttemptAt)

	if _, err := pool.Exec(ctx, "UPDATE deliveries SET status = 'failed', next_attempt_at = NULL WHERE delivery_id = $1", id); err != nil {
		t.Fatal(err)
	}
	if d, err = s.RetryDelivery(ctx, "acme", "whsub_a", id); err != nil {
		t.Fatal(err)
	}
	check("a retry by hand", *d.NextAttemptAt)

	c, err := s.Claim(ctx, domain.ClaimRequest{Limit: 10, PerSubscription: 10, Tenants: 10, DefaultRoom: 10, Lease: time.Minute})
	if err != nil || len(c.Jobs) != 2 {
		t.Fatalf("claimed %d (%v), want the two pending deliveries", len(c.Jobs), err)
	}
	completeAll(t, s, c.Jobs, domain.StatusPending) // given back unattempted
	if err := pool.QueryRow(ctx, "SELECT min(next_attempt_at) FROM deliveries WHERE status = 'pending'").Scan(&due); err != nil {
		t.Fatal(err)
	}
	check("claims given back (one notification per tenant)", due)
	wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if n, err := conn.Conn().WaitForNotification(wctx); err == nil {
		t.Errorf("a second notification %q for claims of one tenant given back together", n.Payload)
	}

	if tenant, _, known := adapters.ParseNotification("acme"); tenant != "acme" || known {
		t.Fatalf("an earlier version's notification reads as %q (due known %v), want acme, due unknown", tenant, known)
	}
}

// A claim's lease reaches each delivery it leases by its tuple ID, so it examines no
// other row, even when the table's statistics are those of a queue with nothing pending
// (a quiet installation that autovacuum last analyzed between bursts). In that state the
// lease's update used to compare every leased row with every due delivery of the tenant
// (99,900 rows for a claim of 100 among 1,000 due, 400,000 among 4,000): in the backlog
// benchmark a fan-out to ten subscriptions took 37–62 ms per claim and delivered a
// quarter of what it does otherwise.
func TestClaimsLeaseExaminesOnlyTheRowsItLeases(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	for i := range 10 {
		addSubscription(t, s, "acme", fmt.Sprintf("whsub_%d", i), true, nil)
	}
	// 4,000 delivered, then the statistics of a queue with nothing pending, kept while
	// 1,000 new deliveries arrive.
	deliveries := `INSERT INTO deliveries (tenant_id, delivery_id, subscription_id, event_id, event_type,
			ordering_key, body, status, next_attempt_at, created_at, updated_at)
		SELECT 'acme', $2 || i, 'whsub_' || i % 10, $2 || i / 10, 'form.submitted', 'form_' || i / 10, '\x00',
			$3, CASE WHEN $3 = 'pending' THEN now() - interval '1 hour' + i * interval '1 millisecond' END, now(), now()
		FROM generate_series(1, $1::int) AS i`
	for _, step := range []struct {
		q    string
		args []any
	}{
		{"ALTER TABLE deliveries SET (autovacuum_enabled = off)", nil},
		{deliveries, []any{4000, "whdel_done_", "succeeded"}},
		{"VACUUM (ANALYZE) deliveries", nil},
		{deliveries, []any{1000, "whdel_due_", "pending"}},
	} {
		if _, err := pool.Exec(ctx, step.q, step.args...); err != nil {
			t.Fatal(err)
		}
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	plan, err := adapters.ExplainClaim(ctx, tx, domain.ClaimRequest{Limit: 100, PerSubscription: 16, Tenants: 64,
		DefaultRoom: 128, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	// The lease is the claimed CTE: the lines below its heading, indented deeper.
	var lease []string
	for i, line := range plan {
		if strings.TrimSpace(line) != "CTE claimed" {
			continue
		}
		depth := len(line) - len(strings.TrimLeft(line, " "))
		for _, l := range plan[i+1:] {
			if len(l)-len(strings.TrimLeft(l, " ")) <= depth {
				break
			}
			lease = append(lease, l)
		}
	}
	if len(lease) == 0 || !strings.Contains(lease[0], "rows=100 ") {
		t.Fatalf("no lease of 100 deliveries in the plan:\n%s", strings.Join(plan, "\n"))
	}
	examined := 0
	for _, l := range lease {
		if _, n, ok := strings.Cut(l, "Rows Removed by "); ok {
			var removed int
			if _, err := fmt.Sscan(n[strings.Index(n, ":")+1:], &removed); err != nil {
				t.Fatal(err)
			}
			examined += removed
		}
	}
	if examined > 0 {
		t.Fatalf("the lease of 100 deliveries examined %d rows it did not lease (1,000 due):\n%s", examined, strings.Join(lease, "\n"))
	}
}
