package adapters

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/customerapi/platform/services/webhooks/internal/domain"
)

const eventCols = "event_id, event_type, subject, occurred_at, body"

func scanEvent(r pgx.Row) (domain.Event, error) {
	var e domain.Event
	err := r.Scan(&e.ID, &e.Type, &e.Subject, &e.OccurredAt, &e.Body)
	return e, err
}

// recordEvent keeps an event for the events API, once however often it arrives.
func recordEvent(ctx context.Context, tx pgx.Tx, tenantID, eventID, eventType, subject string, occurredAt time.Time, body []byte) error {
	_, err := tx.Exec(ctx, `
		INSERT INTO events (tenant_id, event_id, event_type, subject, occurred_at, body)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (tenant_id, event_id) DO NOTHING`,
		tenantID, eventID, eventType, subject, occurredAt, body)
	if err != nil {
		return fmt.Errorf("record event: %w", err)
	}
	return nil
}

// ListEvents returns up to limit of the tenant's events that match f, newest first.
func (s *Store) ListEvents(ctx context.Context, tenantID string, f domain.EventFilter, limit int) ([]domain.Event, error) {
	before := f.Before
	if before == "" {
		before = "\U0010FFFF"
	}
	rows, err := s.pool.Query(ctx, "SELECT "+eventCols+` FROM events
		WHERE tenant_id = $1 AND event_id < $2
		  AND ($3 = '' OR event_type = $3) AND ($4 = '' OR subject = $4)
		  AND ($5::timestamptz IS NULL OR occurred_at >= $5) AND ($6::timestamptz IS NULL OR occurred_at < $6)
		ORDER BY event_id DESC LIMIT $7`, tenantID, before, f.Type, f.Subject, f.Since, f.Until, limit)
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.Event, error) { return scanEvent(r) })
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	return out, nil
}

// GetEvent returns one of the tenant's events.
func (s *Store) GetEvent(ctx context.Context, tenantID, eventID string) (domain.Event, error) {
	e, err := scanEvent(s.pool.QueryRow(ctx, "SELECT "+eventCols+" FROM events WHERE tenant_id = $1 AND event_id = $2", tenantID, eventID))
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.Event{}, domain.ErrEventNotFound
	}
	if err != nil {
		return domain.Event{}, fmt.Errorf("get event: %w", err)
	}
	return e, nil
}

// EventPurger deletes events kept longer than the retention (dispatch.Purger).
type EventPurger struct{ Store *Store }

// PurgeFinished deletes up to limit events stored before cutoff.
func (p EventPurger) PurgeFinished(ctx context.Context, cutoff time.Time, limit int) (int64, error) {
	tag, err := p.Store.pool.Exec(ctx, `
		DELETE FROM events WHERE ctid IN (SELECT ctid FROM events WHERE created_at < $1 LIMIT $2)`, cutoff, limit)
	if err != nil {
		return 0, fmt.Errorf("purge events: %w", err)
	}
	return tag.RowsAffected(), nil
}
