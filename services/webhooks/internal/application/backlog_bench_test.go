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

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/customerapi/platform/libs/service/servicetest"
	"github.com/customerapi/platform/services/webhooks/internal/adapters"
	"github.com/customerapi/platform/services/webhooks/internal/app/delivery"
	"github.com/customerapi/platform/services/webhooks/internal/application"
	"github.com/customerapi/platform/services/webhooks/internal/domain"
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

// backlogRounds is how many times BenchmarkDeliveryThroughputBacklog measures each
// queue: 3, or WEBHOOKS_BACKLOG_ROUNDS.
func backlogRounds() int {
	if n, err := strconv.Atoi(os.Getenv("WEBHOOKS_BACKLOG_ROUNDS")); err == nil && n > 0 {
		return n
	}
	return 3
}

// BenchmarkDeliveryThroughputBacklog measures deliveries per second of new events, as
// BenchmarkDeliveryThroughput does (publish to the last answer at a fast receiver), in
// two services side by side, each with its own database: one with an empty queue, one
// with backlogSize pending deliveries (seedBacklogSQL says which). The two are measured
// in alternating rounds (backlogRounds), so that a change in the machine's load falls on
// both; each round reports both rates and the second as a share of the first, with the
// claims the engine made meanwhile (per second, and their mean time from its
// webhook_claim_duration_seconds histogram). For each queue it logs the EXPLAIN
// (ANALYZE, BUFFERS) of a claim of 100 fresh due deliveries of a measured tenant
// (10 events × 10 subscriptions), as the engine makes it while busy with that tenant,
// rolled back.
func BenchmarkDeliveryThroughputBacklog(b *testing.B) {
	rc, url := newArrivals(b)
	empty, full := newBacklogQueue(b, "empty", url), newBacklogQueue(b, "1M", url)
	began := time.Now()
	seedBacklog(b, full.pool)
	var pending int64
	if err := full.pool.QueryRow(context.Background(), `SELECT count(*) FROM deliveries WHERE status = 'pending'`).
		Scan(&pending); err != nil {
		b.Fatal(err)
	}
	fmt.Printf("seeded %d pending deliveries in %s\n", pending, time.Since(began).Round(time.Millisecond))
	empty.warm(b, rc)
	full.warm(b, rc)
	empty.explain(b)
	full.explain(b)

	rates := map[string]float64{} // "round/subscriptions" → the empty queue's rate
	for round := 1; round <= backlogRounds(); round++ {
		b.Run(fmt.Sprintf("round=%d", round), func(b *testing.B) {
			for _, q := range []*backlogQueue{empty, full} {
				q.throughput(b, rc, round, rates)
			}
		})
	}
}

// backlogFanouts are the measured tenants' subscription counts: tenant benchN has N.
var backlogFanouts = []int{1, 10}

// backlogQueue is one side of BenchmarkDeliveryThroughputBacklog: a service and its
// database, with the measured tenants subscribed.
type backlogQueue struct {
	name string
	s    *servicetest.Service
	pool *pgxpool.Pool
	// statements logs each measurement's busiest statements (WEBHOOKS_BENCH_STATEMENTS=1
	// and pg_stat_statements loaded on the server, TEST_DATABASE_URL).
	statements bool
}

func newBacklogQueue(b *testing.B, name, url string) *backlogQueue {
	ctx := context.Background()
	q := &backlogQueue{name: name, s: start(b, nil, application.Options{}),
		statements: os.Getenv("WEBHOOKS_BENCH_STATEMENTS") == "1"}
	pool, err := pgxpool.New(ctx, q.s.DatabaseURL)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	q.pool = pool
	for _, n := range backlogFanouts {
		c := client(b, q.s, fmt.Sprintf("bench%d", n))
		for i := 0; i < n; i++ {
			r := c.Do("POST", "/v0/webhook_subscriptions", map[string]any{"url": fmt.Sprintf("%s/%d/%d", url, n, i), "events": nil})
			if r.Status != 201 {
				b.Fatalf("subscribe: %s", r)
			}
		}
	}
	if q.statements {
		if _, err := pool.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`); err != nil {
			b.Fatal(err)
		}
	}
	return q
}

// warm delivers a few thousand deliveries of each measured tenant before the rounds, so
// that the statistics the rounds start from are those of a queue in use, not of an empty
// table: PostgreSQL plans the engine's statements for a table it believes holds no rows
// (a claim then took 37 ms instead of 5), and a queue is that small only in its first
// minutes, until autovacuum analyzes it.
func (q *backlogQueue) warm(b *testing.B, rc *arrivals) {
	for _, n := range backlogFanouts {
		rc.deliver(b, q.s.Broker, formEvents(b, fmt.Sprintf("bench%d", n), "form_"+q.name+"_warm", 2000/n), n)
	}
}

// throughput measures one round of the queue, every fanout; rates holds the empty
// queue's rates of the round for the share.
func (q *backlogQueue) throughput(b *testing.B, rc *arrivals, round int, rates map[string]float64) {
	ctx := context.Background()
	// Every measurement starts vacuumed, as autovacuum keeps a busy queue: the deliveries
	// of earlier rounds leave dead entries in the queue's indexes.
	if _, err := q.pool.Exec(ctx, `VACUUM (ANALYZE) deliveries`); err != nil {
		b.Fatal(err)
	}
	if q.statements {
		if _, err := q.pool.Exec(ctx, `SELECT pg_stat_statements_reset()`); err != nil {
			b.Fatal(err)
		}
		defer q.logStatements(b, round)
	}
	b.Run("queue="+q.name, func(b *testing.B) {
		for _, n := range backlogFanouts {
			b.Run(fmt.Sprintf("subscriptions=%d", n), func(b *testing.B) {
				nEvents := (b.N + n - 1) / n
				evts := formEvents(b, fmt.Sprintf("bench%d", n), fmt.Sprintf("form_%s_%d_%d", q.name, round, b.N), nEvents)
				claimsBefore := claimStats(b, q.s.MetricsURL)
				b.ResetTimer()
				began := time.Now()
				rc.deliver(b, q.s.Broker, evts, n)
				elapsed := time.Since(began)
				b.StopTimer()
				rate := float64(nEvents*n) / elapsed.Seconds()
				b.ReportMetric(rate, "deliveries/s")
				claimed := claimStats(b, q.s.MetricsURL).minus(claimsBefore)
				b.ReportMetric(claimed.count/elapsed.Seconds(), "claims/s")
				b.ReportMetric(1000*claimed.sum/max(claimed.count, 1), "claim-ms")
				key := fmt.Sprintf("%d/%d", round, n)
				if q.name == "empty" {
					rates[key] = rate
				} else if empty, ok := rates[key]; ok {
					b.ReportMetric(100*rate/empty, "%-of-empty")
				}
			})
		}
	})
}

// logStatements prints the queue's busiest statements since the last reset.
func (q *backlogQueue) logStatements(b *testing.B, round int) {
	rows, err := q.pool.Query(context.Background(), `SELECT calls, round(total_exec_time::numeric, 1), round(mean_exec_time::numeric, 3),
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
		var query string
		if err := rows.Scan(&calls, &total, &mean, &query); err != nil {
			b.Fatal(err)
		}
		lines = append(lines, fmt.Sprintf("%8d calls %10.1f ms total %8.3f ms mean  %s", calls, total, mean, query))
	}
	fmt.Printf("statements, queue=%s, round %d:\n%s\n", q.name, round, strings.Join(lines, "\n"))
}

// explain prints the plans of a claim of 100 fresh due deliveries of the measured tenant
// with ten subscriptions, as the engine makes it between rounds (the turn explores
// delivery.QuietTenants) and during a round (delivery.ClaimTenants).
func (q *backlogQueue) explain(b *testing.B) {
	q.explainClaim(b, "between rounds", delivery.QuietTenants)
	q.explainClaim(b, "during a round", delivery.ClaimTenants)
}

// explainClaim prints the plan of one claim whose turn explores tenants: a transaction
// records the deliveries (ten events), claims, and rolls it all back.
func (q *backlogQueue) explainClaim(b *testing.B, kind string, tenants int) {
	ctx := context.Background()
	req := domain.ClaimRequest{Limit: 100, PerSubscription: 16, Tenants: tenants, Rooms: map[string]int{"bench10": 128},
		DefaultRoom: 128, Lease: 80 * time.Second}
	tx, err := q.pool.Begin(ctx)
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
	plan, err := adapters.ExplainClaim(ctx, tx, req)
	if err != nil {
		b.Fatal(err)
	}
	fmt.Printf("claim plan %s, queue=%s:\n%s\n", kind, q.name, strings.Join(plan, "\n"))
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
