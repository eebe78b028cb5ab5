package adapters_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/customerapi/platform/libs/postgres/pgtest"
	"github.com/customerapi/platform/services/webhooks/internal/adapters"
	"github.com/customerapi/platform/services/webhooks/internal/adapters/secretbox"
	"github.com/customerapi/platform/services/webhooks/internal/domain"
)

// failedDelivery adds a failed delivery of whsub_a with n attempts: attempt i took i ms,
// made i seconds after base.
func failedDelivery(t testing.TB, pool *pgxpool.Pool, id string, n int, base time.Time) {
	t.Helper()
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `INSERT INTO deliveries (tenant_id, delivery_id, subscription_id, event_id, event_type,
		ordering_key, body, status, created_at, updated_at, attempt_count)
		VALUES ('acme', $1, 'whsub_a', 'evt_' || $1, 'form.submitted', 'form_1', '\x7b7d', 'failed', $2, $2, $3)`,
		id, base, n); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO delivery_attempts (tenant_id, delivery_id, attempt_no, attempted_at,
			status_code, duration_ms, error, response_snippet)
		SELECT 'acme', $1, i, $2::timestamptz + i * interval '1 second', 503, i, 'receiver answered 503', repeat('x', 512)
		FROM generate_series(1, $3::int) AS i`, id, base, n); err != nil {
		t.Fatal(err)
	}
}

// checkLatest fails unless d lists its latest attempts (at most domain.ListedAttempts,
// oldest first) and counts all n.
func checkLatest(t *testing.T, d domain.Delivery, n int) {
	t.Helper()
	if d.AttemptsCount != n {
		t.Errorf("delivery %s: attemptsCount %d, want every attempt made (%d)", d.ID, d.AttemptsCount, n)
	}
	want := min(n, domain.ListedAttempts)
	if len(d.Attempts) != want {
		t.Errorf("delivery %s with %d attempts lists %d, want the latest %d", d.ID, n, len(d.Attempts), want)
		return
	}
	for i, a := range d.Attempts {
		if no := int64(n - want + 1 + i); a.DurationMs != no {
			t.Errorf("delivery %s: listed attempt %d is attempt %d, want %d (the latest, oldest first)", d.ID, i, a.DurationMs, no)
			return
		}
	}
}

// A delivery's answer carries its latest domain.ListedAttempts attempts and the count of
// all, and the database sends no more than those: a tenant that retries a delivery again
// and again must not make every answer naming it (up to 100 on a page) grow with it.
func TestDeliveriesListTheirLatestAttemptsAndCountAll(t *testing.T) {
	ctx := context.Background()
	_, pool := newStore(t)
	sent := &pgtest.StatementLog{}
	s := adapters.NewStore(pgtest.Traced(t, pool, sent), secretbox.Ephemeral())
	addSubscription(t, s, "acme", "whsub_a", true, nil)
	base := time.Now().Add(-time.Hour).UTC().Truncate(time.Millisecond)
	counts := map[string]int{"delivery_1": 60, "delivery_2": 3, "delivery_3": 0, "delivery_4": domain.ListedAttempts}
	for id, n := range counts {
		failedDelivery(t, pool, id, n, base)
	}

	// sentRows runs again every statement sent since the last call and returns the most
	// rows one of them returned.
	sentRows := func() int {
		t.Helper()
		most := 0
		for _, st := range sent.Take() {
			if !strings.HasPrefix(strings.TrimSpace(st.SQL), "SELECT") {
				continue // begin, commit
			}
			run, err := pgtest.Explain(ctx, pool, st)
			if err != nil {
				t.Fatal(err)
			}
			most = max(most, run.Rows)
		}
		return most
	}

	sent.Take()
	d, err := s.GetDelivery(ctx, "acme", "whsub_a", "delivery_1")
	if err != nil {
		t.Fatal(err)
	}
	rows := sentRows()
	checkLatest(t, d, 60)
	if rows > domain.ListedAttempts {
		t.Errorf("reading one delivery with 60 attempts, a statement returned %d rows: the read must be bounded in SQL at %d attempts",
			rows, domain.ListedAttempts)
	}

	ds, total, err := s.ListDeliveries(ctx, "acme", "whsub_a", domain.DeliveryFilter{}, 100)
	if err != nil || total != 4 || len(ds) != 4 {
		t.Fatalf("listed %d of %d deliveries (%v), want 4", len(ds), total, err)
	}
	rows = sentRows()
	for _, d := range ds {
		checkLatest(t, d, counts[d.ID])
	}
	if bound := domain.ListedAttempts + 3 + 0 + domain.ListedAttempts; rows > bound {
		t.Errorf("listing 4 deliveries with 60, 3, 0 and %d attempts, a statement returned %d rows: the read must be bounded in SQL at %d",
			domain.ListedAttempts, rows, bound)
	}
}

// Each manual retry starts a fresh schedule, so without a limit retries alone would grow a
// delivery's attempts without end: once it has made domain.RetryAttemptsLimit attempts, a
// retry is refused and leaves the delivery as it was.
func TestManualRetriesStopAtTheAttemptsLimit(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	addSubscription(t, s, "acme", "whsub_a", true, nil)
	base := time.Now().Add(-time.Hour).UTC().Truncate(time.Millisecond)
	failedDelivery(t, pool, "delivery_below", domain.RetryAttemptsLimit-1, base)
	failedDelivery(t, pool, "delivery_at", domain.RetryAttemptsLimit, base)

	d, err := s.RetryDelivery(ctx, "acme", "whsub_a", "delivery_below")
	if err != nil || d.Status != domain.StatusPending {
		t.Fatalf("a retry of a delivery with %d attempts was refused (%v, status %s): below the limit of %d it must be taken",
			domain.RetryAttemptsLimit-1, err, d.Status, domain.RetryAttemptsLimit)
	}
	_, err = s.RetryDelivery(ctx, "acme", "whsub_a", "delivery_at")
	if !errors.Is(err, domain.ErrRetryLimit) {
		t.Fatalf("a retry of a delivery with %d attempts answered %v, want domain.ErrRetryLimit: a manual retry beyond the limit must be refused",
			domain.RetryAttemptsLimit, err)
	}
	var status string
	var due *time.Time
	if err := pool.QueryRow(ctx, "SELECT status, next_attempt_at FROM deliveries WHERE delivery_id = 'delivery_at'").
		Scan(&status, &due); err != nil {
		t.Fatal(err)
	}
	if status != "failed" || due != nil {
		t.Errorf("a refused retry left the delivery %s, due %v: it must stay failed and not due", status, due)
	}
}
