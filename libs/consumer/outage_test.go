package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/customerapi/platform/libs/consumer"
	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/events/kafkatest"
	"github.com/customerapi/platform/libs/postgres/pgtest"
	"github.com/customerapi/platform/libs/telemetry/metrictest"
)

// refuseConnections makes pool's database refuse new connections and ends the ones it
// has, as a failover or an operator's ALTER DATABASE would; the returned func allows them
// again.
func refuseConnections(t *testing.T, pool *pgxpool.Pool) func() {
	t.Helper()
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, os.Getenv(pgtest.EnvURL))
	if err != nil {
		t.Fatal(err)
	}
	db := pool.Config().ConnConfig.Database
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := admin.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	exec(fmt.Sprintf("ALTER DATABASE %s WITH ALLOW_CONNECTIONS false", pgx.Identifier{db}.Sanitize()))
	exec("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", db)
	allowed := false
	allow := func() {
		if allowed {
			return
		}
		allowed = true
		exec(fmt.Sprintf("ALTER DATABASE %s WITH ALLOW_CONNECTIONS true", pgx.Identifier{db}.Sanitize()))
		_ = admin.Close(ctx)
	}
	t.Cleanup(allow)
	return allow
}

// A database outage far longer than an event's retries is waited out: the events that
// arrive meanwhile are handled once it ends, none dead-lettered and none passed by the
// offset (it used to try each event MaxAttempts times over ~3 s, fail to record the dead
// letter on the same database, and commit the offset past it: the event was lost).
func TestADatabaseOutageIsWaitedOutNotCountedAgainstTheEvent(t *testing.T) {
	pool := newDB(t)
	broker := kafkatest.Start(t)
	first := ev(t, "s", 0)
	publish(t, broker.Config(), first)
	reg := prometheus.NewRegistry()
	metrics := consumer.NewMetrics(reg)
	run(t, &consumer.Consumer{Name: "c", Topics: []string{"things"}, Kafka: broker.Config(), Pool: pool,
		MaxAttempts: 2, Handler: record, Metrics: metrics})
	waitCount(t, pool, 1, "SELECT count(*) FROM seen")

	allow := refuseConnections(t, pool)
	during := []events.Envelope{ev(t, "s", 1), ev(t, "s", 2), ev(t, "t", 3)}
	publish(t, broker.Config(), during...)
	// Far longer than two attempts with their backoff (0.1 s).
	deadline := time.Now().Add(4 * time.Second)
	for time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if v := metrictest.Sum(t, reg, "consumer_dependency_waiting", map[string]string{"consumer": "c"}); v != 1 {
		t.Errorf("consumer_dependency_waiting = %v during the outage, want 1", v)
	}
	allow()

	waitCount(t, pool, 4, "SELECT count(*) FROM seen")
	if n := count(t, pool, "SELECT count(*) FROM inbox_dead_letters"); n != 0 {
		t.Fatalf("%d events dead-lettered by a database outage: an unavailable dependency must be waited out, not counted as a failed attempt", n)
	}
	if n := count(t, pool, "SELECT count(DISTINCT event_id) FROM seen"); n != 4 {
		t.Fatalf("%d distinct events handled, want 4", n)
	}
	if v := metrictest.Sum(t, reg, "consumer_dependency_waiting", map[string]string{"consumer": "c"}); v != 0 {
		t.Errorf("consumer_dependency_waiting = %v after the outage, want 0", v)
	}
}

// An event whose dead letter cannot be written is not passed: the consumer keeps trying
// to record it, and the events after it on the partition wait (it used to log "dead
// letter not recorded" and commit the offset past the event anyway).
func TestAnEventIsNotPassedUntilItsDeadLetterIsRecorded(t *testing.T) {
	pool := newDB(t)
	broker := kafkatest.Start(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, "ALTER TABLE inbox_dead_letters RENAME TO inbox_dead_letters_away"); err != nil {
		t.Fatal(err)
	}
	bad, good := ev(t, "s", 1), ev(t, "s", 2) // one subject: one partition, in this order
	publish(t, broker.Config(), bad, good)
	var tries atomic.Int64
	reg := prometheus.NewRegistry()
	run(t, &consumer.Consumer{Name: "c", Topics: []string{"things"}, Kafka: broker.Config(), Pool: pool, MaxAttempts: 1,
		Metrics: consumer.NewMetrics(reg),
		Handler: func(ctx context.Context, tx pgx.Tx, e events.Envelope) error {
			if e.ID == bad.ID {
				tries.Add(1)
				return errors.New("cannot handle")
			}
			return record(ctx, tx, e)
		}})
	for start := time.Now(); tries.Load() == 0 || time.Since(start) < 2*time.Second; {
		if time.Since(start) > 20*time.Second {
			t.Fatal("the failing event was never tried")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := count(t, pool, "SELECT count(*) FROM seen"); n != 0 {
		t.Fatalf("the event after one whose dead letter could not be recorded was handled (%d): the offset moved past an event neither processed nor dead-lettered", n)
	}
	waiting := func() float64 {
		return metrictest.Sum(t, reg, "consumer_dependency_waiting", map[string]string{"consumer": "c"})
	}
	if v := waiting(); v != 1 {
		t.Errorf("consumer_dependency_waiting = %v while a dead letter cannot be written, want 1", v)
	}
	if _, err := pool.Exec(ctx, "ALTER TABLE inbox_dead_letters_away RENAME TO inbox_dead_letters"); err != nil {
		t.Fatal(err)
	}
	waitCount(t, pool, 1, "SELECT count(*) FROM inbox_dead_letters WHERE event_id = $1", bad.ID)
	waitCount(t, pool, 1, "SELECT count(*) FROM seen WHERE event_id = $1", good.ID)
	if v := waiting(); v != 0 {
		t.Errorf("consumer_dependency_waiting = %v once the dead letter is written, want 0 (the alert would fire on a consumer that is consuming)", v)
	}
}
