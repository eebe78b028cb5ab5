package adapters_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/customerapi/platform/libs/outbox"
	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/libs/postgres/pgtest"
	"github.com/customerapi/platform/services/persons/internal/adapters"
	"github.com/customerapi/platform/services/persons/internal/app"
	"github.com/customerapi/platform/services/persons/internal/domain"
	"github.com/customerapi/platform/services/persons/migrations"
)

// enrichAtOnce runs the submissions in concurrent transactions, as consumers of several
// partitions (or replicas) would.
func enrichAtOnce(t *testing.T, pool *pgxpool.Pool, subs []domain.Submission) {
	t.Helper()
	store := adapters.NewStore(pool, outbox.Writer{})
	svc := &app.Service{Repo: store}
	var wg sync.WaitGroup
	for _, sub := range subs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := postgres.InTx(context.Background(), pool, func(tx pgx.Tx) error { return svc.Enrich(context.Background(), store.Enrichments(tx), sub) })
			if err != nil {
				t.Errorf("enrich %s: %v", sub.Form.FormSubmissionID, err)
			}
		}()
	}
	wg.Wait()
}

func countRows(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Concurrent submissions of one new email create one person; the others match it.
// Concurrent deliveries of one submission (under several event IDs) enrich it once.
func TestConcurrentEnrichmentsCreateOnePerson(t *testing.T) {
	pool := pgtest.NewPool(t, migrations.Set, outbox.Migrations)
	email := "New.Visitor@Concurrent.example"
	var subs []domain.Submission
	for i := 0; i < 6; i++ {
		subs = append(subs, domain.Submission{TenantID: "acme", EventID: fmt.Sprint("evt_", i), NewPersonID: fmt.Sprint("person_", i),
			Now: time.Now(), Form: domain.FormSubmitted{FormSubmissionID: fmt.Sprint("form_", i), Identifier: email,
				IdentifierType: "email", Email: &email}})
	}
	enrichAtOnce(t, pool, subs)
	if n := countRows(t, pool, "SELECT count(*) FROM persons WHERE tenant_id = 'acme'"); n != 1 {
		t.Fatalf("%d persons", n)
	}
	if c, m := countRows(t, pool, "SELECT count(*) FROM form_enrichments WHERE outcome = 'created'"),
		countRows(t, pool, "SELECT count(*) FROM form_enrichments WHERE outcome = 'matched'"); c != 1 || m != 5 {
		t.Fatalf("%d created, %d matched", c, m)
	}
	if n := countRows(t, pool, "SELECT count(*) FROM outbox WHERE topic = 'persons.events'"); n != 6 {
		t.Fatalf("%d events", n)
	}

	var again []domain.Submission
	for i := 0; i < 4; i++ {
		again = append(again, domain.Submission{TenantID: "acme", EventID: fmt.Sprint("evt_again_", i), NewPersonID: fmt.Sprint("person_again_", i),
			Now: time.Now(), Form: domain.FormSubmitted{FormSubmissionID: "form_again", Identifier: "Other@Concurrent.example",
				IdentifierType: "email"}})
	}
	enrichAtOnce(t, pool, again)
	if n := countRows(t, pool, "SELECT count(*) FROM persons WHERE tenant_id = 'acme'"); n != 2 {
		t.Fatalf("%d persons", n)
	}
	if n := countRows(t, pool, "SELECT count(*) FROM outbox WHERE msg_key = 'form_again'"); n != 1 {
		t.Fatalf("%d events for one submission", n)
	}
}
