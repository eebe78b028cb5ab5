package adapters_test

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/customerapi/platform/libs/outbox"
	"github.com/customerapi/platform/libs/postgres/pgtest"
	"github.com/customerapi/platform/services/persons/internal/adapters"
	"github.com/customerapi/platform/services/persons/migrations"
)

// BenchmarkSearchMillion measures person search over 1,000,000 persons of one tenant (the
// brief's bound: under 50 ms p99), for narrow, medium, broad and empty queries and for
// common and rare queries of 1 and 2 characters, and reports the p50 and p99 of each
// (run with -benchtime=100x or more for a meaningful p99).
func BenchmarkSearchMillion(b *testing.B) {
	pool := pgtest.NewPool(b, migrations.Set)
	ctx := context.Background()
	fill(b, pool, "bench", 1000000, 20000, "md5(i::text)")
	store := adapters.NewStore(pool, outbox.Writer{})
	for _, tc := range []struct{ name, query string }{
		{"narrow", "user424242@"},      // one match
		{"domain", "company4242.exam"}, // 50 matches
		{"broad", "example"},           // every person
		{"empty", ""},                  // the plain list
		{"pair-common", "ab"},          // too short for trigrams, 11% match
		{"pair-rare", "zq"},            // no match: persons_search_short
		{"char-common", "e"},           // every person
		{"char-rare", "q"},             // no match: persons_search_short
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
			b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}
