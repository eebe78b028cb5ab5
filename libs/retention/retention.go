// Package retention deletes the rows of a table that are older than its retention, in
// small batches, so a table that only grows (processed event IDs, dead letters) stays
// bounded without long transactions or a scan of the whole table.
package retention

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// Table is a table whose rows are deleted once Column is older than Keep.
type Table struct {
	Name string
	// Column is a timestamptz column with an index (the batches walk it oldest first).
	Column string
	// Keep is how long a row is kept; 0 keeps rows forever.
	Keep time.Duration
}

// DefaultBatch is how many rows one DELETE removes at most.
const DefaultBatch = 10_000

// DefaultInterval is the wait between two passes over the tables.
const DefaultInterval = time.Minute

// lockClass is the first key of the advisory locks that let one replica prune a table
// at a time (the two-key lock space does not overlap the one-key space of migrations).
const lockClass = 0x72657465 // "rete"

// Pruner deletes expired rows of its tables, batch by batch, each batch a transaction
// of its own under a per-table advisory lock: replicas running it together take turns.
type Pruner struct {
	Pool   *pgxpool.Pool
	Tables []Table
	// Batch is the most rows one statement deletes (default DefaultBatch).
	Batch int
	// Interval separates passes (default DefaultInterval).
	Interval time.Duration
	Metrics  *Metrics
	Log      *slog.Logger
}

// Run prunes every Interval, the first time an Interval after it starts, until ctx
// ends; a failed pass is logged and retried at the
// next one.
func (p *Pruner) Run(ctx context.Context) error {
	interval := p.Interval
	if interval <= 0 {
		interval = DefaultInterval
	}
	for {
		// The first pass waits too: a process starting has more urgent work.
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
		if _, err := p.Prune(ctx); err != nil && ctx.Err() == nil && p.Log != nil {
			p.Log.Warn("retention: pruning failed; retried at the next pass", slog.Any("error", err))
		}
	}
}

// Prune deletes every expired row of the tables now, in batches, and returns how many
// it deleted. A table another replica is pruning is left to it.
func (p *Pruner) Prune(ctx context.Context) (int64, error) {
	var total int64
	for _, t := range p.Tables {
		if t.Keep <= 0 {
			continue
		}
		n, err := p.pruneTable(ctx, t)
		total += n
		if err != nil {
			return total, fmt.Errorf("retention: %s: %w", t.Name, err)
		}
		if n > 0 && p.Log != nil {
			p.Log.Info("retention: expired rows deleted", slog.String("table", t.Name), slog.Int64("rows", n),
				slog.Duration("keep", t.Keep))
		}
	}
	return total, nil
}

func (p *Pruner) pruneTable(ctx context.Context, t Table) (int64, error) {
	batch := p.Batch
	if batch <= 0 {
		batch = DefaultBatch
	}
	table, column := pgx.Identifier{t.Name}.Sanitize(), pgx.Identifier{t.Column}.Sanitize()
	// The oldest rows by the indexed column, at most batch of them: an index range scan,
	// never the whole table. The outer condition keeps a row whose ctid was reused safe.
	del := fmt.Sprintf(`DELETE FROM %[1]s WHERE ctid = ANY (ARRAY(
		SELECT ctid FROM %[1]s WHERE %[2]s < now() - $1::float8 * interval '1 millisecond' ORDER BY %[2]s LIMIT $2))
		AND %[2]s < now() - $1::float8 * interval '1 millisecond'`, table, column)
	var total int64
	for {
		n, held, err := p.deleteBatch(ctx, t.Name, del, t.Keep.Milliseconds(), batch)
		total += n
		if p.Metrics != nil && n > 0 {
			p.Metrics.pruned.WithLabelValues(t.Name).Add(float64(n))
		}
		if err != nil || !held || n < int64(batch) {
			return total, err
		}
	}
}

// deleteBatch runs one DELETE in a short transaction of its own, if no other session
// holds the table's pruning lock (held is false then).
func (p *Pruner) deleteBatch(ctx context.Context, table, del string, keepMillis int64, batch int) (n int64, held bool, err error) {
	err = pgx.BeginFunc(ctx, p.Pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, "SELECT pg_try_advisory_xact_lock($1, hashtext($2))", lockClass, table).Scan(&held); err != nil || !held {
			return err
		}
		tag, err := tx.Exec(ctx, del, keepMillis, batch)
		n = tag.RowsAffected()
		return err
	})
	if err != nil {
		return 0, held, err
	}
	return n, held, nil
}

// Metrics counts the rows pruned.
type Metrics struct{ pruned *prometheus.CounterVec }

// NewMetrics registers retention_pruned_rows_total on r.
func NewMetrics(r prometheus.Registerer) *Metrics {
	m := &Metrics{pruned: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "retention_pruned_rows_total",
		Help: "Rows deleted because they were older than their table's retention.",
	}, []string{"table"})}
	r.MustRegister(m.pruned)
	return m
}
