package adapters_test

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/customerapi/platform/libs/postgres/pgtest"
	"github.com/customerapi/platform/services/persons/internal/adapters"
	"github.com/customerapi/platform/services/persons/migrations"
)

// BenchmarkSearchMillion measures person search over 1,000,000 persons of one tenant (the
// brief's bound: under 50 ms p99), for narrow, medium, broad and empty queries, and
// reports the p99 of each.
func BenchmarkSearchMillion(b *testing.B) {
	pool := pgtest.NewPool(b, migrations.Set)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `INSERT INTO persons (tenant_id, person_id, name, email, domain, slug, created_at, updated_at)
		SELECT 'bench', 'person_' || lpad(i::text, 26, '0'), 'Person ' || md5(i::text), 'user' || i || '@company' || (i % 20000) || '.example',
			'company' || (i % 20000) || '.example', 'person-' || i, now(), now()
		FROM generate_series(1, 1000000) AS i`); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "ANALYZE persons"); err != nil {
		b.Fatal(err)
	}
	store := adapters.NewStore(pool)
	for _, tc := range []struct{ name, query string }{
		{"narrow", "user424242@"},      // one match
		{"domain", "company4242.exam"}, // 50 matches
		{"broad", "example"},           // every person
		{"empty", ""},                  // the plain list
		{"short", "ab"},                // too short for trigrams
	} {
		b.Run(tc.name, func(b *testing.B) {
			var took []time.Duration
			for i := 0; i < b.N; i++ {
				began := time.Now()
				if _, _, err := store.SearchPersons(ctx, "bench", tc.query, "", 21); err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(began))
			}
			sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
			b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}
