// Package pagestest seeds the pages tables for tests of the packages that read them
// (sessions, page links) without going through the pages routes.
package pagestest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/customerapi/platform/libs/ids"
)

// SeedPage inserts a draft page and n audiences of it straight into the pages tables
// and returns their IDs.
func SeedPage(t testing.TB, pool *pgxpool.Pool, tenantID string, n int) (string, []string) {
	t.Helper()
	ctx := context.Background()
	pageID := ids.New("page")
	now := time.Now().UTC()
	if _, err := pool.Exec(ctx, `INSERT INTO pages (tenant_id, id, name, title, page_type, status, created_at, updated_at)
		VALUES ($1, $2, 'p', 'P', 'inbound', 'draft', $3, $3)`, tenantID, pageID, now); err != nil {
		t.Fatal(err)
	}
	var audiences []string
	for i := 0; i < n; i++ {
		id := ids.New("audience")
		if _, err := pool.Exec(ctx, `INSERT INTO audiences (tenant_id, id, page_id, computed_name, status, publish_behavior,
			created_at, updated_at) VALUES ($1, $2, $3, $4, 'draft', 'draft', $5, $5)`,
			tenantID, id, pageID, fmt.Sprint("audience ", i), now); err != nil {
			t.Fatal(err)
		}
		audiences = append(audiences, id)
	}
	return pageID, audiences
}
