package adapters_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/customerapi/platform/libs/postgres/pgtest"
	"github.com/customerapi/platform/services/persons/internal/adapters"
	"github.com/customerapi/platform/services/persons/migrations"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// A search over 100,000 persons uses the trigram index, not a scan of the table, and
// answers quickly.
func TestSearchUsesTheTrigramIndex(t *testing.T) {
	pool := pgtest.NewPool(t, migrations.Set)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := pool.Exec(ctx, `INSERT INTO persons (tenant_id, person_id, name, email, domain, slug, created_at, updated_at)
		SELECT 'acme', 'person_' || lpad(i::text, 26, '0'), 'Person ' || i, 'user' || i || '@company' || (i % 5000) || '.example',
			'company' || (i % 5000) || '.example', 'person-' || i, now(), now()
		FROM generate_series(1, 100000) AS i`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "ANALYZE persons"); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"user4242@", "Company1234.example", "person 99999"} {
		rows, err := pool.Query(ctx, "EXPLAIN "+adapters.SearchSQL, "acme", adapters.LikePattern(q), "", 21)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, line)
		}
		if rows.Err() != nil {
			t.Fatal(rows.Err())
		}
		if text := strings.Join(plan, "\n"); !strings.Contains(text, "persons_search") {
			t.Fatalf("query %q does not use the trigram index:\n%s", q, text)
		}
	}
	store := adapters.NewStore(pool)
	began := time.Now()
	got, total, err := store.SearchPersons(ctx, "acme", "USER4242@", "", 21)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Name != "Person 4242" || total == nil || *total != 1 {
		t.Fatalf("got %v, total %v", got, total)
	}
	t.Logf("search took %v", time.Since(began))
	// Common matches: more than the count cap gives a null totalCount.
	got, total, err = store.SearchPersons(ctx, "acme", "example", "", 21)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 21 || total != nil {
		t.Fatalf("broad search: %d items, total %v", len(got), total)
	}
	_, total, err = store.SearchPersons(ctx, "acme", "company12.example", "", 21)
	if err != nil {
		t.Fatal(err)
	}
	if total == nil || *total != 20 {
		t.Fatalf("company12.example: total %v", total)
	}
}
