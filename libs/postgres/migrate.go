package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
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
	// a failure part way (e.g. DROP INDEX CONCURRENTLY IF EXISTS before CREATE INDEX
	// CONCURRENTLY, which leaves an invalid index behind when it fails).
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

// Migrate applies the pending migrations of each set in order, each migration in its own
// transaction (or, marked no-transaction, statement by statement). A session advisory lock makes replicas that start together take turns: the
// first applies, the others then find nothing to do. An applied migration whose file has
// changed since is an error, not silently skipped.
func Migrate(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger, sets ...MigrationSet) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("migrations: acquire: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", migrationLockKey); err != nil {
		return fmt.Errorf("migrations: lock: %w", err)
	}
	defer func() {
		_, _ = conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", migrationLockKey)
	}()
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		set_name   text NOT NULL,
		version    bigint NOT NULL,
		name       text NOT NULL,
		checksum   text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now(),
		PRIMARY KEY (set_name, version))`); err != nil {
		return fmt.Errorf("migrations: create table: %w", err)
	}
	for _, set := range sets {
		if err := applySet(ctx, conn.Conn(), set, log); err != nil {
			return err
		}
	}
	return nil
}

func applySet(ctx context.Context, conn *pgx.Conn, set MigrationSet, log *slog.Logger) error {
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
		if err := apply(ctx, conn, set.Name, m); err != nil {
			return fmt.Errorf("migrations: apply %s/%s: %w", set.Name, m.Name, err)
		}
		if log != nil {
			log.Info("migration applied", slog.String("set", set.Name), slog.String("migration", m.Name))
		}
	}
	return nil
}

// apply runs one migration and records it: in one transaction, or, for a no-transaction
// migration, statement by statement and then the record.
func apply(ctx context.Context, conn *pgx.Conn, set string, m Migration) error {
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
		if _, err := conn.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("statement %d: %w", i+1, err)
		}
	}
	_, err := conn.Exec(ctx, record, set, m.Version, m.Name, m.Sum)
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
