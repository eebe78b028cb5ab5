// Package postgres opens the connection pool of a service, applies its embedded
// migrations safely when several replicas start at once, and offers the small transaction
// and error helpers every repository uses.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/customerapi/platform/libs/worker"
)

// Connect opens a pool for url (a postgres:// URL; pool_max_conns and friends may be set
// in it; the pool defaults to max(16, 4×CPUs) connections, its sessions to jit off) and
// waits, retrying, until the database answers or ctx ends: in a cluster a service may
// start before its database.
func Connect(ctx context.Context, url string) (*pgxpool.Pool, error) {
	return ConnectWith(ctx, url, nil)
}

// ConnectWith is Connect with a hook to adjust the pool configuration (e.g. a tracer).
func ConnectWith(ctx context.Context, url string, configure func(*pgxpool.Config)) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: parse DATABASE_URL: %w", err)
	}
	if !strings.Contains(url, "pool_max_conns") {
		// pgxpool's default (the number of CPUs, at least 4) queues requests behind a
		// handful of connections; a service waits on the database far more than it
		// computes, so allow more concurrent transactions.
		cfg.MaxConns = int32(max(16, 4*runtime.NumCPU()))
	}
	if _, set := cfg.ConnConfig.RuntimeParams["jit"]; !set {
		// The services run short statements. PostgreSQL compiles a statement whose
		// estimated cost passes jit_above_cost, and estimates are rough: at 10,000,000
		// persons a search with no match was estimated at 50,000 and spent 45 of its 55 ms
		// compiling (docs/benchmarks.md). A URL that sets jit keeps its choice.
		cfg.ConnConfig.RuntimeParams["jit"] = "off"
	}
	if configure != nil {
		configure(cfg)
	}
	if cfg.MaxConnIdleTime == 0 {
		cfg.MaxConnIdleTime = 5 * time.Minute
	}
	cfg.HealthCheckPeriod = 15 * time.Second
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: pool: %w", err)
	}
	backoff := worker.Backoff{Max: 2 * time.Second}
	for {
		pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		err = pool.Ping(pctx)
		cancel()
		if err == nil {
			return pool, nil
		}
		if !backoff.Sleep(ctx) {
			pool.Close()
			return nil, fmt.Errorf("postgres: database not reachable: %w", err)
		}
	}
}

// Check is a readiness check of the pool.
func Check(pool *pgxpool.Pool) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		if err := pool.Ping(ctx); err != nil {
			return fmt.Errorf("database: %w", err)
		}
		return nil
	}
}

// InTx runs fn in a transaction, committing when it returns nil and rolling back
// otherwise.
func InTx(ctx context.Context, pool *pgxpool.Pool, fn func(tx pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, pool, fn)
}

// Conn is what a statement needs, met by a pool and by a transaction alike, so that one
// function serves both.
type Conn interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

var (
	_ Conn = (*pgxpool.Pool)(nil)
	_ Conn = pgx.Tx(nil)
)

// SQLSTATE codes the repositories map to API errors.
const (
	UniqueViolation     = "23505"
	ForeignKeyViolation = "23503"
	SerializationFail   = "40001"
	DeadlockDetected    = "40P01"
)

// IsCode reports whether err is a PostgreSQL error with the given SQLSTATE.
func IsCode(err error, code string) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == code
}

// ConstraintOf returns the constraint name of a PostgreSQL error, or "".
func ConstraintOf(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.ConstraintName
	}
	return ""
}

// IsNoRows reports whether err is pgx.ErrNoRows.
func IsNoRows(err error) bool { return errors.Is(err, pgx.ErrNoRows) }
