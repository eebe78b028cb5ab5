package retention_test

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/customerapi/platform/libs/postgres/pgtest"
	"github.com/customerapi/platform/libs/retention"
	"github.com/customerapi/platform/libs/telemetry/metrictest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// deletes records how many rows each DELETE removed.
type deletes struct {
	mu   sync.Mutex
	rows []int64
}

type isDelete struct{}

func (d *deletes) TraceQueryStart(ctx context.Context, _ *pgx.Conn, q pgx.TraceQueryStartData) context.Context {
	return context.WithValue(ctx, isDelete{}, strings.HasPrefix(strings.TrimSpace(q.SQL), "DELETE"))
}

func (d *deletes) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, q pgx.TraceQueryEndData) {
	if del, _ := ctx.Value(isDelete{}).(bool); del && q.Err == nil {
		d.mu.Lock()
		d.rows = append(d.rows, q.CommandTag.RowsAffected())
		d.mu.Unlock()
	}
}

const keep = 7 * 24 * time.Hour

// agedTable creates a table like the inbox: 2,500 rows 10 days old, 5 just under 7 days
// old and 10 an hour old.
func agedTable(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), `
		CREATE TABLE events (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, at timestamptz NOT NULL);
		CREATE INDEX events_at ON events (at);
		INSERT INTO events (at) SELECT now() - interval '10 days' - i * interval '1 second' FROM generate_series(1, 2500) AS i;
		INSERT INTO events (at) SELECT now() - interval '7 days' + interval '1 hour' FROM generate_series(1, 5);
		INSERT INTO events (at) SELECT now() - interval '1 hour' FROM generate_series(1, 10);`); err != nil {
		t.Fatal(err)
	}
}

func count(t *testing.T, pool *pgxpool.Pool, where string) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), "SELECT count(*) FROM events WHERE "+where).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Rows older than the retention go, younger rows stay, and a backlog larger than a
// batch goes in batches of at most Batch rows, each its own statement.
func TestPruneDeletesExpiredRowsInBoundedBatches(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	agedTable(t, pool)
	var log deletes
	reg := prometheus.NewRegistry()
	p := &retention.Pruner{Pool: pgtest.Traced(t, pool, &log), Batch: 1000, Metrics: retention.NewMetrics(reg),
		Tables: []retention.Table{{Name: "events", Column: "at", Keep: keep}}}
	n, err := p.Prune(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n != 2500 || count(t, pool, "true") != 15 || count(t, pool, "at > now() - interval '7 days'") != 15 {
		t.Fatalf("pruned %d, left %d rows; want the 2,500 older than the retention gone and the 15 younger kept", n, count(t, pool, "true"))
	}
	if want := []int64{1000, 1000, 500}; !equal(log.rows, want) {
		t.Errorf("rows per DELETE = %v, want %v; the rule: a backlog is deleted in statements of at most Batch rows", log.rows, want)
	}
	if got := metrictest.Sum(t, reg, "retention_pruned_rows_total", nil); got != 2500 {
		t.Errorf("retention_pruned_rows_total = %v, want 2500", got)
	}
	if n, err := p.Prune(ctx); err != nil || n != 0 {
		t.Errorf("a second pass pruned %d (%v); want nothing left to prune", n, err)
	}
}

// Replicas that prune at once take turns per table and together delete each expired
// row once, without error; a table with no retention is never pruned.
func TestPruneBySeveralReplicasAtOnce(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	agedTable(t, pool)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var total int64
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := &retention.Pruner{Pool: pool, Batch: 100, Tables: []retention.Table{{Name: "events", Column: "at", Keep: keep}}}
			n, err := p.Prune(ctx)
			if err != nil {
				t.Errorf("a replica's pass: %v", err)
			}
			mu.Lock()
			total += n
			mu.Unlock()
		}()
	}
	wg.Wait()
	// A replica that found a table's lock held leaves it to the holder; the next pass
	// deletes whatever is left.
	again := &retention.Pruner{Pool: pool, Tables: []retention.Table{{Name: "events", Column: "at", Keep: keep}}}
	rest, err := again.Prune(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if total+rest != 2500 || count(t, pool, "at < now() - interval '7 days'") != 0 {
		t.Errorf("replicas pruned %d together, then %d; want each of the 2,500 expired rows deleted once", total, rest)
	}
	if count(t, pool, "true") < 15 {
		t.Fatal("a young row was deleted")
	}
	forever := &retention.Pruner{Pool: pool, Tables: []retention.Table{{Name: "events", Column: "at", Keep: 0}}}
	if _, err := pool.Exec(ctx, "INSERT INTO events (at) VALUES (now() - interval '10 years')"); err != nil {
		t.Fatal(err)
	}
	if n, err := forever.Prune(ctx); err != nil || n != 0 {
		t.Errorf("Keep 0 pruned %d rows (%v); want rows kept forever", n, err)
	}
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
