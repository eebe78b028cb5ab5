package adapters_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/customerapi/platform/libs/keyset"
	"github.com/customerapi/platform/libs/outbox"
	"github.com/customerapi/platform/libs/postgres/pgtest"
	"github.com/customerapi/platform/services/topics/internal/adapters"
	"github.com/customerapi/platform/services/topics/migrations"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// BenchmarkListTopicsDepth shows that a page costs the same however deep it is: keyset
// pagination seeks through the index instead of skipping rows. 20,020 topics, 20 per page:
// page 1 against page 1,000.
func BenchmarkListTopicsDepth(b *testing.B) {
	pool := pgtest.NewPool(b, outbox.Migrations, migrations.Set)
	ctx := context.Background()
	const limit = 20
	const n = 1000*limit + limit // page 1,000 is a full page with more after it
	now := time.Now()
	var last keyset.Position
	if _, err := pool.Exec(ctx, `INSERT INTO topics (tenant_id, topic_id, title, sort_order, created_at, updated_at)
		SELECT 'bench', 'topic_' || lpad(i::text, 26, '0'), 'topic ' || i, i % 7, $1, $1 FROM generate_series(1, $2) i`, now, n); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "ANALYZE topics"); err != nil {
		b.Fatal(err)
	}
	// The position after item (1000-1)*limit in list order.
	if err := pool.QueryRow(ctx, `SELECT sort_order, topic_id FROM topics WHERE tenant_id = 'bench'
		ORDER BY sort_order, topic_id OFFSET $1 LIMIT 1`, (1000-1)*limit-1).Scan(&last.Key, &last.ID); err != nil {
		b.Fatal(err)
	}
	store := adapters.NewStore(pool, outbox.Writer{})
	for _, tc := range []struct {
		name  string
		after *keyset.Position
	}{{"page=1", nil}, {"page=1000", &last}} {
		b.Run(tc.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				items, total, err := store.ListTopics(ctx, "bench", tc.after, limit+1)
				if err != nil || len(items) != limit+1 || total != n {
					b.Fatalf("items %d total %d err %v", len(items), total, err)
				}
			}
		})
	}
}
