package application_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/services/webhooks/internal/adapters"
	"github.com/customerapi/platform/services/webhooks/internal/application"
)

// backlogSize is the number of pending deliveries BenchmarkDeliveryThroughputBacklog
// puts in the queue: 1,000,000, or WEBHOOKS_BACKLOG for a quicker look.
func backlogSize() int {
	if n, err := strconv.Atoi(os.Getenv("WEBHOOKS_BACKLOG")); err == nil && n > 0 {
		return n
	}
	return 1_000_000
}

// seedBacklogSQL records backlogSize pending deliveries in one statement, with the
// shape a large queue has in practice: what piles up is what is not being delivered.
// A queue that drains thousands per second only grows when receivers fail, so:
//
//   - 980,000 wait for a retry (due from 1 minute to 3 days from now, at a retry step of
//     1 to 7) for one failing subscription of each of 1,000 other tenants; skewed as
//     outages are: half of them belong to 10 large tenants (49,000 each), the other half
//     to the remaining 990 (about 495 each).
//   - 10,000 wait for a retry of a failing subscription of the measured tenants
//     themselves (listening to a type the benchmark never publishes), so the claim of a
//     measured tenant's new deliveries reads past its own backlog in the same index.
//   - 10,000 are due (overdue by up to 10 minutes) but held by another replica's claim
//     (lease running out in an hour): 100 each of 100 of the other tenants, about what
//     one replica holds of a tenant (laneDepth × TenantConcurrency = 128). The claim
//     must skip them.
//
// Tenant IDs are hashes, so the measured tenants sit among the others in the claims'
// turn across tenants (tenant order), not before or after them all. Bodies are a
// realistic 500 bytes.
const seedBacklogSQL = `
WITH g AS (
	SELECT i,
		CASE WHEN i <= $1 * 49 / 100 THEN i % 10
		     WHEN i <= $1 * 98 / 100 THEN 10 + i % 990
		     WHEN i <= $1 * 99 / 100 THEN -1 - i % 2
		     ELSE i % 100 END AS t
	FROM generate_series(1, $1) AS i
)
INSERT INTO deliveries (tenant_id, delivery_id, subscription_id, event_id, event_type, ordering_key, body,
	status, retry_step, attempt_count, next_attempt_at, lease_expires_at, lease_token, created_at, updated_at)
SELECT s.tenant_id, 'delivery_backlog' || lpad(g.i::text, 10, '0'), s.subscription_id, 'evt_backlog' || g.i,
	'form.submitted', 'form_' || (g.i % 20000), convert_to(rpad('{"eventId":"evt_backlog' || g.i ||
		'","type":"form.submitted","data":{', 490, 'x') || '"}}', 'UTF8'),
	'pending', r.step, r.step,
	CASE WHEN g.i <= $1 * 99 / 100 THEN now() + make_interval(secs => 60 + random() * 259140)
	     ELSE now() - make_interval(secs => random() * 600) END,
	CASE WHEN g.i > $1 * 99 / 100 THEN now() + interval '1 hour' END, r.step,
	now() - interval '3 days', now() - make_interval(secs => random() * 3600)
FROM g JOIN backlog_subs s ON s.t = g.t,
	LATERAL (SELECT 1 + (g.i % 7) AS step) AS r`

// BenchmarkDeliveryThroughputBacklog measures deliveries per second of new events, as
// BenchmarkDeliveryThroughput does (publish to the last answer at a fast receiver), first
// with an empty queue and then, in the same service and database, with backlogSize
// pending deliveries (seedBacklogSQL says which). It reports both rates and the second as
// a share of the first, with the claims the engine made meanwhile (per second, and their
// mean time from its webhook_claim_duration_seconds histogram). In both states it logs
// the EXPLAIN (ANALYZE, BUFFERS) of a claim of 100 fresh due deliveries of a measured
// tenant (10 events × 10 subscriptions), as the engine makes it while busy with that
// tenant, rolled back.
func BenchmarkDeliveryThroughputBacklog(b *testing.B) {
	s := start(b, nil, application.Options{})
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, s.DatabaseURL)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	rc, url := newArrivals(b)
	fanouts := []int{1, 10}
	for _, n := range fanouts {
		c := client(b, s, fmt.Sprintf("bench%d", n))
		for i := 0; i < n; i++ {
			r := c.Do("POST", "/v0/webhook_subscriptions", map[string]any{"url": fmt.Sprintf("%s/%d/%d", url, n, i), "events": nil})
			if r.Status != 201 {
				b.Fatalf("subscribe: %s", r)
			}
		}
	}

	rates := map[string]float64{}
	// With WEBHOOKS_BENCH_STATEMENTS=1 and pg_stat_statements loaded on the server
	// (TEST_DATABASE_URL), each state's busiest statements are logged.
	statements := os.Getenv("WEBHOOKS_BENCH_STATEMENTS") == "1"
	if statements {
		if _, err := pool.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`); err != nil {
			b.Fatal(err)
		}
	}
	throughput := func(queue string) {
		// Both states start vacuumed, as autovacuum keeps a busy queue: the deliveries
		// of earlier rounds leave dead entries in the queue's indexes.
		if _, err := pool.Exec(ctx, `VACUUM (ANALYZE) deliveries`); err != nil {
			b.Fatal(err)
		}
		if statements {
			if _, err := pool.Exec(ctx, `SELECT pg_stat_statements_reset()`); err != nil {
				b.Fatal(err)
			}
			defer func() {
				rows, err := pool.Query(ctx, `SELECT calls, round(total_exec_time::numeric, 1), round(mean_exec_time::numeric, 3),
						left(regexp_replace(query, '\s+', ' ', 'g'), 160)
					FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
					ORDER BY total_exec_time DESC LIMIT 12`)
				if err != nil {
					b.Fatal(err)
				}
				var lines []string
				for rows.Next() {
					var calls int64
					var total, mean float64
					var q string
					if err := rows.Scan(&calls, &total, &mean, &q); err != nil {
						b.Fatal(err)
					}
					lines = append(lines, fmt.Sprintf("%8d calls %10.1f ms total %8.3f ms mean  %s", calls, total, mean, q))
				}
				fmt.Printf("statements, queue=%s:\n%s\n", queue, strings.Join(lines, "\n"))
			}()
		}
		b.Run("queue="+queue, func(b *testing.B) {
			for _, n := range fanouts {
				b.Run(fmt.Sprintf("subscriptions=%d", n), func(b *testing.B) {
					tenantID := fmt.Sprintf("bench%d", n)
					nEvents := (b.N + n - 1) / n
					evts := make([]events.Envelope, nEvents)
					for i := range evts {
						evts[i] = event(b, tenantID, events.TypeFormSubmitted, fmt.Sprintf("form_%s_%d", queue, i))
					}
					before := rc.count()
					claimsBefore := claimStats(b, s.MetricsURL)
					b.ResetTimer()
					began := time.Now()
					publish(b, s.Broker, evts...)
					rc.wait(b, before+nEvents*n, 5*time.Minute)
					elapsed := time.Since(began)
					b.StopTimer()
					rate := float64(nEvents*n) / elapsed.Seconds()
					rates[fmt.Sprintf("%s/%d", queue, n)] = rate
					b.ReportMetric(rate, "deliveries/s")
					claimed := claimStats(b, s.MetricsURL).minus(claimsBefore)
					b.ReportMetric(claimed.count/elapsed.Seconds(), "claims/s")
					b.ReportMetric(1000*claimed.sum/max(claimed.count, 1), "claim-ms")
					if empty, ok := rates[fmt.Sprintf("empty/%d", n)]; ok && queue != "empty" {
						b.ReportMetric(100*rate/empty, "%-of-empty")
					}
				})
			}
		})
	}
	explain := func(queue string) {
		req := adapters.ClaimRequest{Limit: 100, PerSubscription: 16, Tenants: 64, Rooms: map[string]int{"bench10": 128},
			DefaultRoom: 128, Lease: 80 * time.Second}
		// within runs fn in a transaction that first records 100 due deliveries of the
		// measured tenant with ten subscriptions (ten events), and rolls it all back.
		within := func(b *testing.B, fn func(tx pgx.Tx)) {
			tx, err := pool.Begin(ctx)
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = tx.Rollback(ctx) }()
			if _, err := tx.Exec(ctx, `INSERT INTO deliveries (tenant_id, delivery_id, subscription_id, event_id, event_type,
					ordering_key, body, status, next_attempt_at, created_at, updated_at)
				SELECT s.tenant_id, 'delivery_claim' || i || s.subscription_id, s.subscription_id, 'evt_claim' || i,
					'form.submitted', 'form_claim' || i, '\x7b7d', 'pending', now() - interval '1 millisecond', now(), now()
				FROM generate_series(1, 10) AS i, subscriptions s
				WHERE s.tenant_id = 'bench10' AND s.events IS NULL`); err != nil {
				b.Fatal(err)
			}
			fn(tx)
		}
		within(b, func(tx pgx.Tx) {
			plan, err := adapters.ExplainClaim(ctx, tx, req)
			if err != nil {
				b.Fatal(err)
			}
			fmt.Printf("claim plan, queue=%s:\n%s\n", queue, strings.Join(plan, "\n"))
		})
	}

	throughput("empty")
	explain("empty")

	began := time.Now()
	seedBacklog(b, pool)
	var pending int64
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM deliveries WHERE status = 'pending'`).Scan(&pending); err != nil {
		b.Fatal(err)
	}
	fmt.Printf("seeded %d pending deliveries in %s\n", pending, time.Since(began).Round(time.Millisecond))

	throughput("1M")
	explain("1M")
}

// seedBacklog adds the failing subscriptions of the backlog (one each of 1,000 other
// tenants, t 0–999, and one more of each measured tenant, t -1 and -2) and
// backlogSize pending deliveries (seedBacklogSQL), then vacuums and analyses the table
// as autovacuum would have by the time a queue grew that large.
func seedBacklog(b *testing.B, pool *pgxpool.Pool) {
	ctx := context.Background()
	// The temporary table lives in one session: everything runs on one connection.
	conn, err := pool.Acquire(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Release()
	for _, q := range []string{
		`CREATE TEMP TABLE backlog_subs (t int PRIMARY KEY, tenant_id text COLLATE "C", subscription_id text COLLATE "C")`,
		`INSERT INTO backlog_subs
			SELECT t, 't_' || left(md5(t::text), 12), 'sub_backlog' || lpad(t::text, 4, '0') FROM generate_series(0, 999) AS t
			UNION ALL VALUES (-1, 'bench1', 'sub_backlog_bench1'), (-2, 'bench10', 'sub_backlog_bench10')`,
		`INSERT INTO subscriptions (tenant_id, subscription_id, url, events, active, secret, failing_since, created_at, updated_at)
			SELECT tenant_id, subscription_id, 'https://down.example.com/hooks', ARRAY['form.enrichment_failed'], true,
				'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', now() - interval '3 days', now() - interval '30 days', now()
			FROM backlog_subs`,
		seedBacklogSQL,
		`DROP TABLE backlog_subs`,
		`VACUUM (ANALYZE) deliveries`,
	} {
		args := []any{}
		if q == seedBacklogSQL {
			args = append(args, backlogSize())
		}
		if _, err := conn.Exec(ctx, q, args...); err != nil {
			b.Fatal(err)
		}
	}
}

// claimTotals are the sum and count of webhook_claim_duration_seconds.
type claimTotals struct{ sum, count float64 }

func (a claimTotals) minus(b claimTotals) claimTotals {
	return claimTotals{a.sum - b.sum, a.count - b.count}
}

// claimStats scrapes the engine's claim histogram.
func claimStats(b *testing.B, metricsURL string) claimTotals {
	resp, err := http.Get(metricsURL + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	var t claimTotals
	for _, line := range strings.Split(string(body), "\n") {
		name, value, _ := strings.Cut(line, " ")
		v, _ := strconv.ParseFloat(value, 64)
		switch name {
		case "webhook_claim_duration_seconds_sum":
			t.sum = v
		case "webhook_claim_duration_seconds_count":
			t.count = v
		}
	}
	return t
}
