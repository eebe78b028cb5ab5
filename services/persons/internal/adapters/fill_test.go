package adapters_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
)

// fill inserts n generated persons of a tenant in one statement: person i is named
// "Person <name(i)>" with the email user<i>@company<i % domains>.example and that
// domain; search_text is what the service would write (the data is ASCII), and the
// table is analysed afterwards, as autovacuum would.
func fill(tb testing.TB, pool *pgxpool.Pool, tenantID string, n, domains int, name string) {
	tb.Helper()
	ctx := context.Background()
	_, err := pool.Exec(ctx, fmt.Sprintf(`INSERT INTO persons (tenant_id, person_id, name, email, domain, slug, created_at,
			updated_at, search_text)
		SELECT $1, id, nm, em, dm, 'person-' || i, now(), now(), lower(nm || ' ' || em || ' ' || dm)
		FROM generate_series(1, $2::int) AS i,
			LATERAL (SELECT 'person_' || lpad(i::text, 26, '0') AS id, 'Person ' || %s AS nm,
				'user' || i || '@company' || (i %% $3::int) || '.example' AS em, 'company' || (i %% $3::int) || '.example' AS dm) v`,
		name), tenantID, n, domains)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "ANALYZE persons"); err != nil {
		tb.Fatal(err)
	}
}
