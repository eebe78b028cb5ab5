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
// table is analysed afterwards, as autovacuum would. The indexes that back no
// constraint are dropped before the insert and rebuilt from their own definitions after
// it (as a bulk load does): the same indexes as the migrations made, built in minutes
// instead of the hours ten million inserts into two trigram GIN indexes take.
func fill(tb testing.TB, pool *pgxpool.Pool, tenantID string, n, domains int, name string) {
	tb.Helper()
	ctx := context.Background()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Release()
	var defs []string
	rows, err := conn.Query(ctx, `SELECT indexrelid::regclass::text, pg_get_indexdef(indexrelid) FROM pg_index
		WHERE indrelid = 'persons'::regclass AND NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conindid = indexrelid)`)
	if err != nil {
		tb.Fatal(err)
	}
	var drops []string
	for rows.Next() {
		var index, def string
		if err := rows.Scan(&index, &def); err != nil {
			tb.Fatal(err)
		}
		drops, defs = append(drops, index), append(defs, def)
	}
	if err := rows.Err(); err != nil {
		tb.Fatal(err)
	}
	for _, index := range drops {
		if _, err := conn.Exec(ctx, "DROP INDEX "+index); err != nil {
			tb.Fatal(err)
		}
	}
	_, err = conn.Exec(ctx, fmt.Sprintf(`INSERT INTO persons (tenant_id, person_id, name, email, domain, slug, created_at,
			updated_at, search_text)
		SELECT $1, id, nm, em, dm, 'person-' || i, now(), now(), lower(nm || ' ' || em || ' ' || dm)
		FROM generate_series(1, $2::int) AS i,
			LATERAL (SELECT 'person_' || lpad(i::text, 26, '0') AS id, 'Person ' || %s AS nm,
				'user' || i || '@company' || (i %% $3::int) || '.example' AS em, 'company' || (i %% $3::int) || '.example' AS dm) v`,
		name), tenantID, n, domains)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "SET maintenance_work_mem = '1GB'"); err != nil {
		tb.Fatal(err)
	}
	for _, def := range defs {
		if _, err := conn.Exec(ctx, def); err != nil {
			tb.Fatalf("rebuilding %s: %v", def, err)
		}
	}
	if _, err := conn.Exec(ctx, "RESET maintenance_work_mem"); err != nil {
		tb.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "ANALYZE persons"); err != nil {
		tb.Fatal(err)
	}
}
