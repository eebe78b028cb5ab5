package consumer_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/customerapi/platform/libs/consumer"
	"github.com/customerapi/platform/libs/postgres/pgtest"
	"github.com/customerapi/platform/libs/retention"
)

// The pruner deletes the inbox's expired event IDs and keeps the young ones, and a batch
// reads the expired rows through the processed_at index, not the whole inbox (which
// holds days of events).
func TestInboxRetentionPrunesThroughItsIndex(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t, consumer.Migrations)
	if _, err := pool.Exec(ctx, `
		INSERT INTO inbox (consumer, event_id, processed_at)
			SELECT 'c', 'young-' || i, now() - interval '1 hour' FROM generate_series(1, 100000) AS i;
		INSERT INTO inbox (consumer, event_id, processed_at)
			SELECT 'c', 'old-' || i, now() - interval '9 days' FROM generate_series(1, 2000) AS i;
		ANALYZE inbox`); err != nil {
		t.Fatal(err)
	}
	var log pgtest.StatementLog
	p := &retention.Pruner{Pool: pgtest.Traced(t, pool, &log), Batch: 1000,
		Tables: consumer.RetentionTables(8*24*time.Hour, 0)}
	if n, err := p.Prune(ctx); err != nil || n != 2000 {
		t.Fatalf("pruned %d (%v), want the 2,000 expired event IDs", n, err)
	}
	var young, old int
	if err := pool.QueryRow(ctx, "SELECT count(*) FILTER (WHERE event_id LIKE 'young-%'), count(*) FILTER (WHERE event_id LIKE 'old-%') FROM inbox").Scan(&young, &old); err != nil {
		t.Fatal(err)
	}
	if young != 100000 || old != 0 {
		t.Fatalf("inbox holds %d young and %d expired IDs; want 100000 and 0", young, old)
	}

	var del pgtest.Statement
	for _, s := range log.Take() {
		if strings.HasPrefix(strings.TrimSpace(s.SQL), "DELETE") {
			del = s
		}
	}
	if del.SQL == "" {
		t.Fatal("no DELETE was sent")
	}
	var plan string
	if err := pool.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+del.SQL, del.Args...).Scan(&plan); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plan, `"Index Name": "inbox_processed_at"`) || strings.Contains(plan, `"Seq Scan"`) {
		t.Errorf("the pruner's DELETE is planned as %s; the rule: it reads the expired rows through the processed_at index, never the whole inbox", plan)
	}
}
