package postgres_test

import (
	"context"
	"testing"
	"testing/fstest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/libs/postgres/pgtest"
	"github.com/customerapi/platform/libs/telemetry/metrictest"
)

// A migration that needs a lock another session holds gives up each attempt after the
// lock timeout and tries again later, instead of queueing: while it waits for an ACCESS
// EXCLUSIVE lock, every later query of the table would queue behind it. Once the lock
// is released the migration applies.
func TestMigrateGivesUpALockAfterTheLockTimeoutAndRetries(t *testing.T) {
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, "CREATE TABLE t (v int); INSERT INTO t SELECT generate_series(1, 100)"); err != nil {
		t.Fatal(err)
	}
	holder, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = holder.Rollback(ctx) }()
	if _, err := holder.Exec(ctx, "LOCK TABLE t IN ACCESS SHARE MODE"); err != nil {
		t.Fatal(err)
	}

	const lockTimeout = 200 * time.Millisecond
	reg := prometheus.NewRegistry()
	set := postgres.MigrationSet{Name: "locks", FS: fstest.MapFS{
		"0001_add.sql": {Data: []byte("ALTER TABLE t ADD COLUMN extra int;\n")},
	}}
	done := make(chan error, 1)
	go func() {
		done <- postgres.MigrateWith(ctx, pool, postgres.MigrateOptions{LockTimeout: lockTimeout,
			FirstBackoff: 50 * time.Millisecond, MaxBackoff: 100 * time.Millisecond,
			Metrics: postgres.NewMigrationMetrics(reg)}, set)
	}()

	// Readers of the table while the lock is held: none may wait much longer than the
	// lock timeout behind the migration's queued lock request.
	var slowest time.Duration
	release := time.Now().Add(1500 * time.Millisecond)
	for time.Now().Before(release) {
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		start := time.Now()
		var n int
		err := pool.QueryRow(qctx, "SELECT count(*) FROM t").Scan(&n)
		cancel()
		if err != nil {
			t.Fatalf("a reader of the table: %v; the rule: a migration waits at most the lock timeout (%v) for a lock, so no query queues behind it longer", err, lockTimeout)
		}
		slowest = max(slowest, time.Since(start))
		time.Sleep(20 * time.Millisecond)
	}
	if err := holder.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the migration failed once the lock was released: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the migration did not apply within 10 s of the lock's release")
	}
	if slowest > lockTimeout+300*time.Millisecond {
		t.Errorf("a reader of the table waited %v behind the migration's lock request; the rule: a migration waits at most the lock timeout (%v) for a lock, then retries", slowest, lockTimeout)
	}
	var exists bool
	if err := pool.QueryRow(ctx, "SELECT EXISTS (SELECT FROM information_schema.columns WHERE table_name = 't' AND column_name = 'extra')").Scan(&exists); err != nil || !exists {
		t.Fatalf("column extra missing after the migration (%v)", err)
	}
	if n := metrictest.Sum(t, reg, "migration_lock_timeouts_total", nil); n < 1 {
		t.Errorf("migration_lock_timeouts_total = %v after waiting out a held lock; want the attempts given up counted", n)
	}
	var lt string
	if err := pool.QueryRow(ctx, "SHOW lock_timeout").Scan(&lt); err != nil || lt != "0" {
		t.Errorf("a pooled session kept lock_timeout %q after the migration (%v); it must be reset", lt, err)
	}
}

// A no-transaction file builds its index CONCURRENTLY and, written with IF NOT EXISTS,
// recovers from a failed build by itself: the migrator drops the INVALID index a failed
// concurrent build leaves (IF NOT EXISTS alone would keep it and record the migration),
// then builds it again.
func TestMigrateConcurrentIndexDropsAnInvalidLeftover(t *testing.T) {
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	migs := fstest.MapFS{
		"0001_t.sql": {Data: []byte("CREATE TABLE t (v int NOT NULL);\nINSERT INTO t VALUES (1), (1), (2);\n")},
		"0002_t_v.sql": {Data: []byte(`-- migrate:no-transaction
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS t_v ON t (v);
`)},
	}
	set := postgres.MigrationSet{Name: "cic", FS: migs}
	if err := postgres.Migrate(ctx, pool, nil, set); err == nil {
		t.Fatal("a unique index over duplicate values was built")
	}
	if _, err := pool.Exec(ctx, "DELETE FROM t WHERE ctid = (SELECT min(ctid) FROM t WHERE v = 1)"); err != nil {
		t.Fatal(err)
	}
	if err := postgres.Migrate(ctx, pool, nil, set); err != nil {
		t.Fatalf("the migration run again after the cause was fixed: %v", err)
	}
	var valid bool
	if err := pool.QueryRow(ctx, "SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass('t_v')").Scan(&valid); err != nil || !valid {
		t.Fatalf("index t_v valid = %v (%v) after the retry; the rule: an INVALID index left by a failed concurrent build is dropped and rebuilt", valid, err)
	}
}

// A concurrent index build waits for the transactions older than itself that write the
// table, however long they take, rather than giving up after the lock timeout and
// throwing its work away: its own lock blocks no reader or writer.
func TestMigrateConcurrentIndexWaitsOutOlderWriters(t *testing.T) {
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, "CREATE TABLE t (v int)"); err != nil {
		t.Fatal(err)
	}
	writer, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = writer.Rollback(ctx) }()
	if _, err := writer.Exec(ctx, "INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	set := postgres.MigrationSet{Name: "cic", FS: fstest.MapFS{
		"0001_t_v.sql": {Data: []byte("-- migrate:no-transaction\nCREATE INDEX CONCURRENTLY IF NOT EXISTS t_v ON t (v);\n")},
	}}
	done := make(chan error, 1)
	go func() {
		done <- postgres.MigrateWith(ctx, pool, postgres.MigrateOptions{LockTimeout: 100 * time.Millisecond,
			FirstBackoff: 20 * time.Millisecond, MaxBackoff: 20 * time.Millisecond, Metrics: postgres.NewMigrationMetrics(reg)}, set)
	}()
	time.Sleep(time.Second)
	if _, err := writer.Exec(ctx, "INSERT INTO t VALUES (2)"); err != nil {
		t.Fatalf("a writer was blocked by the concurrent build: %v", err)
	}
	if err := writer.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := metrictest.Sum(t, reg, "migration_lock_timeouts_total", nil); n != 0 {
		t.Errorf("the concurrent build gave up %v times on the lock timeout while an older writer ran; the rule: a concurrent index build waits without a lock timeout", n)
	}
	var lt string
	if err := pool.QueryRow(ctx, "SHOW lock_timeout").Scan(&lt); err != nil || lt != "0" {
		t.Errorf("a pooled session kept lock_timeout %q after the migration (%v); it must be reset", lt, err)
	}
}
