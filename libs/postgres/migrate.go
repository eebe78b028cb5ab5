package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/customerapi/platform/libs/worker"
)

// migrationLockKey is the advisory lock that serialises migrations of one database.
const migrationLockKey = 0x6d696772 // "migr"

// noTransaction is the first line of a migration that must run outside a transaction
// (CREATE INDEX CONCURRENTLY, which keeps writes flowing while a large index builds).
const noTransaction = "-- migrate:no-transaction"

// Migration is one versioned SQL file, named NNNN_description.sql.
type Migration struct {
	Version int64
	Name    string
	SQL     string
	Sum     string
	// NoTransaction is set by a first line "-- migrate:no-transaction": the statements
	// run one by one outside a transaction, so the file must be safe to run again after
	// a failure part way (CREATE INDEX CONCURRENTLY IF NOT EXISTS: the invalid index a
	// failed build leaves is dropped before the statement runs again).
	NoTransaction bool
}

// EmbeddedMigrations is the migration set name whose files are the *.sql of folder dir
// of an embedded file system (a package's `//go:embed dir/*.sql`).
func EmbeddedMigrations(name string, files fs.FS, dir string) MigrationSet {
	sub, err := fs.Sub(files, dir)
	if err != nil {
		panic(fmt.Sprintf("migrations %s: %v", name, err)) // unreachable for a valid folder name
	}
	return MigrationSet{Name: name, FS: sub}
}

// LoadMigrations reads the *.sql files of fsys (its root) in version order.
func LoadMigrations(fsys fs.FS) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	var out []Migration
	seen := map[int64]string{}
	for _, e := range entries {
		if e.IsDir() || path.Ext(e.Name()) != ".sql" {
			continue
		}
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.ParseInt(num, 10, 64)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migrations: %s: name must be NNNN_description.sql", e.Name())
		}
		if prev, dup := seen[v]; dup {
			return nil, fmt.Errorf("migrations: %s and %s share version %d", prev, e.Name(), v)
		}
		seen[v] = e.Name()
		b, err := fs.ReadFile(fsys, e.Name())
		if err != nil {
			return nil, fmt.Errorf("migrations: %w", err)
		}
		sum := sha256.Sum256(b)
		first, _, _ := strings.Cut(string(b), "\n")
		out = append(out, Migration{Version: v, Name: e.Name(), SQL: string(b), Sum: hex.EncodeToString(sum[:]),
			NoTransaction: strings.TrimSpace(first) == noTransaction})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

// MigrationSet is a named series of migrations; versions are numbered within a set, so
// a service's own schema and a shared library's tables (outbox, inbox) evolve apart.
type MigrationSet struct {
	Name string
	FS   fs.FS
}

// Migrate applies the pending migrations of each set with the default options (see
// MigrateWith).
func Migrate(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger, sets ...MigrationSet) error {
	return MigrateWith(ctx, pool, MigrateOptions{Log: log}, sets...)
}

// MigrateOptions tune how migrations wait for the locks their statements need.
type MigrateOptions struct {
	Log *slog.Logger
	// LockTimeout bounds each statement's wait for a lock (default 5 s): a statement
	// queued for a table's lock makes every later query of the table queue behind it.
	LockTimeout time.Duration
	// FirstBackoff and MaxBackoff space the attempts of a migration that gave up on a
	// lock (default 1 s, doubling up to 30 s).
	FirstBackoff, MaxBackoff time.Duration
	// Metrics counts the attempts given up on a lock (optional).
	Metrics *MigrationMetrics
}

func (o MigrateOptions) withDefaults() MigrateOptions {
	if o.LockTimeout <= 0 {
		o.LockTimeout = DefaultLockTimeout
	}
	if o.FirstBackoff <= 0 {
		o.FirstBackoff = time.Second
	}
	if o.MaxBackoff < o.FirstBackoff {
		o.MaxBackoff = max(30*time.Second, o.FirstBackoff)
	}
	return o
}

// DefaultLockTimeout is how long a migration's statement waits for a lock by default.
const DefaultLockTimeout = 5 * time.Second

// MigrationMetrics counts the attempts of migrations given up on a lock.
type MigrationMetrics struct{ lockTimeouts *prometheus.CounterVec }

// NewMigrationMetrics registers migration_lock_timeouts_total on r.
func NewMigrationMetrics(r prometheus.Registerer) *MigrationMetrics {
	m := &MigrationMetrics{lockTimeouts: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "migration_lock_timeouts_total",
		Help: "Attempts of a migration given up because a lock was not granted within the lock timeout; the migration is retried.",
	}, []string{"set", "migration"})}
	r.MustRegister(m.lockTimeouts)
	return m
}

// MigrateWith applies the pending migrations of each set in order, each migration in its
// own transaction (or, marked no-transaction, statement by statement). A session
// advisory lock makes replicas that start together take turns: the first applies, the
// others then find nothing to do. An applied migration whose file has changed since is
// an error, not silently skipped. Every statement waits at most opts.LockTimeout for a
// lock; a migration that gave up on one is rolled back and tried again after a backoff
// until ctx ends. There is no statement timeout: a migration runs as long as it needs.
func MigrateWith(ctx context.Context, pool *pgxpool.Pool, opts MigrateOptions, sets ...MigrationSet) error {
	opts = opts.withDefaults()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("migrations: acquire: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", migrationLockKey); err != nil {
		return fmt.Errorf("migrations: lock: %w", err)
	}
	defer func() {
		// The session returns to the pool: its settings go back to their defaults.
		_, _ = conn.Exec(context.WithoutCancel(ctx), "RESET lock_timeout; RESET statement_timeout")
		_, _ = conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", migrationLockKey)
	}()
	if _, err := conn.Exec(ctx, "SET statement_timeout = 0"); err != nil {
		return fmt.Errorf("migrations: statement timeout: %w", err)
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		set_name   text NOT NULL,
		version    bigint NOT NULL,
		name       text NOT NULL,
		checksum   text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now(),
		PRIMARY KEY (set_name, version))`); err != nil {
		return fmt.Errorf("migrations: create table: %w", err)
	}
	if err := setLockTimeout(ctx, conn.Conn(), opts.LockTimeout); err != nil {
		return err
	}
	for _, set := range sets {
		if err := applySet(ctx, conn.Conn(), set, opts); err != nil {
			return err
		}
	}
	return nil
}

// setLockTimeout sets the session's lock_timeout (0: wait as long as it takes).
func setLockTimeout(ctx context.Context, conn *pgx.Conn, d time.Duration) error {
	if _, err := conn.Exec(ctx, fmt.Sprintf("SET lock_timeout = %d", d.Milliseconds())); err != nil {
		return fmt.Errorf("migrations: lock timeout: %w", err)
	}
	return nil
}

func applySet(ctx context.Context, conn *pgx.Conn, set MigrationSet, opts MigrateOptions) error {
	migs, err := LoadMigrations(set.FS)
	if err != nil {
		return fmt.Errorf("%s %w", set.Name, err)
	}
	applied := map[int64]string{}
	rows, err := conn.Query(ctx, "SELECT version, checksum FROM schema_migrations WHERE set_name = $1", set.Name)
	if err != nil {
		return fmt.Errorf("migrations: read applied: %w", err)
	}
	for rows.Next() {
		var v int64
		var sum string
		if err := rows.Scan(&v, &sum); err != nil {
			return fmt.Errorf("migrations: read applied: %w", err)
		}
		applied[v] = sum
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("migrations: read applied: %w", err)
	}
	for _, m := range migs {
		if sum, ok := applied[m.Version]; ok {
			if sum != m.Sum {
				return fmt.Errorf("migrations: %s/%s was changed after it was applied (checksum mismatch); add a new migration instead", set.Name, m.Name)
			}
			continue
		}
		if err := applyRetrying(ctx, conn, set.Name, m, opts); err != nil {
			return fmt.Errorf("migrations: apply %s/%s: %w", set.Name, m.Name, err)
		}
		if opts.Log != nil {
			opts.Log.Info("migration applied", slog.String("set", set.Name), slog.String("migration", m.Name))
		}
	}
	return nil
}

// applyRetrying applies m, and again after a backoff each time an attempt gave up on a
// lock (SQLSTATE 55P03), until ctx ends.
func applyRetrying(ctx context.Context, conn *pgx.Conn, set string, m Migration, opts MigrateOptions) error {
	backoff := worker.Backoff{First: opts.FirstBackoff, Max: opts.MaxBackoff}
	for attempt := 1; ; attempt++ {
		err := apply(ctx, conn, set, m, opts.LockTimeout)
		if err == nil || !IsCode(err, lockNotAvailable) {
			return err
		}
		if opts.Metrics != nil {
			opts.Metrics.lockTimeouts.WithLabelValues(set, m.Name).Inc()
		}
		if opts.Log != nil {
			opts.Log.Warn("migration gave up waiting for a lock; it will try again (other sessions hold locks it needs)",
				slog.String("set", set), slog.String("migration", m.Name), slog.Int("attempt", attempt),
				slog.Duration("lock_timeout", opts.LockTimeout), slog.Duration("retry_in", backoff.Peek()), slog.Any("error", err))
		}
		if !backoff.Sleep(ctx) {
			return fmt.Errorf("gave up waiting for a lock after %d attempts: %w", attempt, ctx.Err())
		}
	}
}

// lockNotAvailable is the SQLSTATE of a statement that gave up on a lock (lock_timeout).
const lockNotAvailable = "55P03"

// apply runs one migration and records it: in one transaction, or, for a no-transaction
// migration, statement by statement and then the record.
func apply(ctx context.Context, conn *pgx.Conn, set string, m Migration, lockTimeout time.Duration) error {
	const record = "INSERT INTO schema_migrations (set_name, version, name, checksum) VALUES ($1, $2, $3, $4)"
	if !m.NoTransaction {
		return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, record, set, m.Version, m.Name, m.Sum)
			return err
		})
	}
	for i, stmt := range statements(m.SQL) {
		if err := execStatement(ctx, conn, stmt, lockTimeout); err != nil {
			return fmt.Errorf("statement %d: %w", i+1, err)
		}
	}
	_, err := conn.Exec(ctx, record, set, m.Version, m.Name, m.Sum)
	return err
}

// concurrentIndex matches a statement that builds or drops an index CONCURRENTLY, and
// captures the name a build gives its index.
var concurrentIndex = regexp.MustCompile(`(?is)^\s*(?:create\s+(?:unique\s+)?index\s+concurrently(?:\s+if\s+not\s+exists)?\s+([^\s(]+)|(?:drop\s+index|reindex\s+\w+)\s+concurrently)`)

// execStatement runs one statement of a no-transaction migration. A concurrent index
// build or drop runs without a lock timeout: it takes no lock that reads or writes wait
// for, but it must wait for every transaction older than itself, and giving up there
// would throw its work away. An INVALID index of the same name, left by a failed
// concurrent build (migrations run one at a time, so none is being built), is dropped
// first: IF NOT EXISTS would otherwise keep it.
func execStatement(ctx context.Context, conn *pgx.Conn, stmt string, lockTimeout time.Duration) (rerr error) {
	match := concurrentIndex.FindStringSubmatch(stmt)
	if match == nil {
		_, err := conn.Exec(ctx, stmt)
		return err
	}
	if err := setLockTimeout(ctx, conn, 0); err != nil {
		return err
	}
	defer func() {
		if err := setLockTimeout(ctx, conn, lockTimeout); err != nil && rerr == nil {
			rerr = err
		}
	}()
	if name := match[1]; name != "" {
		var invalid bool
		err := conn.QueryRow(ctx, "SELECT NOT indisvalid FROM pg_index WHERE indexrelid = to_regclass($1)", name).Scan(&invalid)
		if err != nil && !IsNoRows(err) {
			return fmt.Errorf("index %s: %w", name, err)
		}
		if invalid {
			if _, err := conn.Exec(ctx, "DROP INDEX CONCURRENTLY IF EXISTS "+name); err != nil {
				return fmt.Errorf("drop the invalid index %s: %w", name, err)
			}
		}
	}
	_, err := conn.Exec(ctx, stmt)
	return err
}

// statements splits a no-transaction migration into its statements: each ends with a
// semicolon at the end of a line (PostgreSQL runs a multi-statement string as one
// transaction block, where CREATE INDEX CONCURRENTLY is refused). Comment lines and
// blank lines between statements are dropped.
func statements(sql string) []string {
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(sql, "\n") {
		trimmed := strings.TrimSpace(line)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "--")) {
			continue
		}
		cur.WriteString(line)
		cur.WriteString("\n")
		if strings.HasSuffix(trimmed, ";") {
			out = append(out, strings.TrimSpace(cur.String()))
			cur.Reset()
		}
	}
	if rest := strings.TrimSpace(cur.String()); rest != "" {
		out = append(out, rest)
	}
	return out
}
