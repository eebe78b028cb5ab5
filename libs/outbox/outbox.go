// Package outbox implements the transactional outbox: Add writes events in the caller's
// transaction, and Relay publishes committed rows to Kafka in commit order, at least once,
// woken by LISTEN/NOTIFY.
package outbox

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5"

	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/postgres"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Migrations is the outbox's schema; every service that writes events applies it.
var Migrations = postgres.MigrationSet{Name: "outbox", FS: mustSub(migrationFS, "migrations")}

func mustSub(f fs.FS, dir string) fs.FS {
	s, err := fs.Sub(f, dir)
	if err != nil {
		panic(err) // unreachable: the directory is embedded above
	}
	return s
}

// Add writes events to the outbox inside tx, one statement for all of them. They are
// published only if and when tx commits. The trace context of ctx travels with them.
func Add(ctx context.Context, tx pgx.Tx, topic string, evts ...events.Envelope) error {
	if len(evts) == 0 {
		return nil
	}
	sql, args, err := insert(ctx, topic, evts)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, sql, args...); err != nil {
		return fmt.Errorf("outbox: insert: %w", err)
	}
	return nil
}

// Queue appends the outbox insert of evts to b. A batch sent outside a transaction runs
// as one implicit transaction, so a change and its events queued in one batch commit
// together in a single round trip (the cheapest way to write a row and its event).
func Queue(ctx context.Context, b *pgx.Batch, topic string, evts ...events.Envelope) error {
	if len(evts) == 0 {
		return nil
	}
	sql, args, err := insert(ctx, topic, evts)
	if err != nil {
		return err
	}
	b.Queue(sql, args...)
	return nil
}

const insertSQL = `
		INSERT INTO outbox (topic, event_id, msg_key, value, headers)
		SELECT $1, e, k, v, h::jsonb
		FROM unnest($2::text[], $3::text[], $4::bytea[], $5::text[]) WITH ORDINALITY AS t(e, k, v, h, n)
		ORDER BY n`

func insert(ctx context.Context, topic string, evts []events.Envelope) (string, []any, error) {
	var (
		eventIDs = make([]string, len(evts))
		keys     = make([]string, len(evts))
		values   = make([][]byte, len(evts))
		headers  = make([]string, len(evts))
	)
	for i, e := range evts {
		v, err := json.Marshal(e)
		if err != nil {
			return "", nil, fmt.Errorf("outbox: marshal %s: %w", e.Type, err)
		}
		h, err := json.Marshal(e.Headers(ctx))
		if err != nil {
			return "", nil, fmt.Errorf("outbox: marshal headers: %w", err)
		}
		eventIDs[i], keys[i], values[i], headers[i] = e.ID, e.Subject, v, string(h)
	}
	return insertSQL, []any{topic, eventIDs, keys, values, headers}, nil
}
